"""`bench kv_reuse` on a real llama.cpp `llama-server` (the one `make test` installs), with
and without its chunk reuse (`n_cache_reuse`, which Brim sends on every request).

The same scripted turns as the embedded cases, run four times, each on a fresh server with
one slot (`-np 1`: with several, a request may land on a slot whose cache holds none of it;
fresh, so that no run reads another's cache): Brim's session and the sliding window, each
with the reuse Brim asks for and with it off (`n_cache_reuse: 0`, what a client that does
not ask for it gets from a server started without `--cache-reuse`).

The prompt tokens evaluated anew are the server's own figures (`prompt_tokens` minus
`cached_tokens`; cached counts the common prefix and the chunks it shifted).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench._llama_server import running_llama_server
from bench.kv_reuse import Case, RequestRecorder, Tally, run_session, slide
from engine.config import default_agent
from engine.messages import Message
from engine.providers.base import ChatOptions, StreamItem
from engine.providers.embedded import default_model_path
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.providers.llamacpp import LlamaCppProvider


class RecordingServerProvider(LlamaCppProvider):
    """llama-server, recording every request that lands as the embedded cases do;
    `reuse=False` sends `n_cache_reuse: 0`, the server's own default."""

    def __init__(self, tally: Tally, *, sliding: bool, reuse: bool, base_url: str) -> None:
        super().__init__(base_url)
        self.reuse = reuse
        self.tokenizer = GgufTokenizer(default_model_path())
        self.recorder = RequestRecorder(tally, sliding=sliding, label=f"server reuse={reuse}")

    def request_body(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> dict[str, Any]:
        body = super().request_body(model, messages, options)
        if not self.reuse:
            body["n_cache_reuse"] = 0
        return body

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        # The common prefix by the model's template as Brim's tokenizer renders it (the
        # server's own rendering may differ by a few framing tokens).
        tokens = self.tokenizer.request_tokens(messages, list(options.tools) or None)
        stream = super().stream_chat(model, messages, options)
        async for item in self.recorder.recorded(stream, messages, tokens):
            yield item


async def _ladder(url: str, case: Case, turns: list[str], *, reuse: bool) -> Tally:
    tally = Tally()
    provider = RecordingServerProvider(tally, sliding=False, reuse=reuse, base_url=url)
    agent = default_agent().with_changes(
        provider="llamacpp",
        base_url=url,
        model="",
        num_ctx=case.window,
        max_tokens=case.max_tokens,
    )
    label = f"server ladder, reuse {reuse}"
    tally.wall_s = await run_session(case, turns, provider, agent, label)
    return tally


async def _sliding(url: str, case: Case, turns: list[str], *, reuse: bool) -> Tally:
    tally = Tally()
    provider = RecordingServerProvider(tally, sliding=True, reuse=reuse, base_url=url)
    count = provider.tokenizer.count_request
    tally.wall_s = await slide(case, turns, provider, count, f"server sliding, reuse {reuse}")
    return tally


def run_on_server(case: Case, turns: list[str], *, sliding: bool, reuse: bool) -> Tally:
    """One run on a fresh one-slot llama-server with the case's window."""
    run = _sliding if sliding else _ladder
    with (
        tempfile.TemporaryDirectory() as logs,
        running_llama_server(Path(logs), ctx=case.window, parallel=1) as server,
    ):
        return asyncio.run(run(server.url, case, turns, reuse=reuse))
