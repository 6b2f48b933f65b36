"""Build a provider from an agent's `provider` kind: the one place that knows every module."""

from __future__ import annotations

from typing import Any

from engine.providers.base import PROVIDER_KINDS, Provider


def make_provider(kind: str, base_url: str | None = None, **kw: Any) -> Provider:
    """`kind` is one of `PROVIDER_KINDS`; `kw` goes to the provider (timeouts, api_key, ...;
    for "embedded": model_path, n_ctx, ...). An empty base URL means the engine's default."""
    base_url = base_url or None
    if kind == "ollama":
        from engine.providers.ollama import OllamaProvider

        return OllamaProvider(base_url, **kw)
    if kind == "llamacpp":
        from engine.providers.llamacpp import LlamaCppProvider

        return LlamaCppProvider(base_url, **kw)
    if kind == "vllm":
        from engine.providers.vllm import VllmProvider

        return VllmProvider(base_url, **kw)
    if kind == "sglang":
        from engine.providers.sglang import SglangProvider

        return SglangProvider(base_url, **kw)
    if kind == "embedded":
        # Imported here: it pulls in llama-cpp-python machinery the HTTP engines never need.
        from engine.providers.embedded import EmbeddedProvider

        return EmbeddedProvider(**kw)
    raise ValueError(f"unknown provider {kind!r}; expected one of: {', '.join(PROVIDER_KINDS)}")
