"""The model's own vocabulary behind an Ollama model, so Brim counts its text exactly.

`/api/show` names the GGUF a model runs from (a path on Ollama's machine). When Ollama runs
on this machine and the file is a GGUF Brim may open, its vocabulary is opened alone
(vocabulary-only, read-only) and counts the text; Ollama's framing is learned as a
residual. Otherwise the count is an estimate, and the reason is kept for `/context`.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from engine.providers.model_file import ModelFileRefused, open_vocabulary, refusal_text
from engine.providers.ollama_answers import runs_here

# How long opening the model's vocabulary may take before Brim counts without it.
OPEN_VOCABULARY_S = 30.0


class Vocabularies:
    """The vocabularies opened for the models of one Ollama at `base_url`, each tried once."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._tokenizers: dict[str, Any] = {}  # model -> GgufTokenizer or None
        self._notes: dict[str, str] = {}  # model -> why its count is an estimate

    def tokenizer(self, model: str, blob: str | None) -> Any:
        """`model`'s vocabulary from `blob`, or None; opened here unless `prepare` did."""
        if model not in self._tokenizers:
            self._keep(model, *self._open(blob))
        return self._tokenizers[model]

    async def prepare(self, model: str, blob: str | None) -> None:
        """Open the vocabulary in a worker thread, within OPEN_VOCABULARY_S: cancelling
        the report (Esc, SIGTERM) is not held up by the disk."""
        if model in self._tokenizers:
            return
        try:
            found = await asyncio.wait_for(asyncio.to_thread(self._open, blob), OPEN_VOCABULARY_S)
        except TimeoutError:
            found = (
                None,
                f"the model file Ollama names ({blob}) took more than "
                f"{OPEN_VOCABULARY_S:g} s to open; it was not used",
            )
        self._keep(model, *found)

    def note(self, model: str) -> str:
        """Why `model`'s count is an estimate."""
        return self._notes.get(model, "Ollama cannot count tokens for Brim")

    def _keep(self, model: str, tokenizer: Any, note: str | None) -> None:
        self._tokenizers[model] = tokenizer
        if note:
            self._notes[model] = note

    def _open(self, blob: str | None) -> tuple[Any, str | None]:
        if not runs_here(self.base_url):
            host = urlsplit(self.base_url).hostname or self.base_url
            return None, (
                f"Ollama runs on another machine ({host}), so the model's own vocabulary "
                "cannot be opened here"
            )
        if blob is None:
            return None, "Ollama's /api/show names no model file (no FROM path)"
        try:
            return open_vocabulary(blob), None
        except ModelFileRefused as exc:
            return None, refusal_text(blob, exc)
        except Exception as exc:  # not a GGUF, a vocabulary llama.cpp cannot load
            return None, f"the model file {blob} could not be opened ({exc})"
