""" "Does this pin fit?" for one agent as edited: the model's GGUF found the way the agent's
engine finds it (the embedded engine's path or bundled name; Ollama's modelfile FROM path
when Ollama runs here), then the estimate at the pin for the three KV types side by side.
Engines behind other servers hold their model files where Brim cannot read them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from engine.config import AgentConfig
from engine.fit.estimate import FitRequest, estimate
from engine.fit.gpu import gpu_free_bytes, ram_available_bytes
from engine.fit.kv import KV_TYPES
from engine.fit.report import FitUnavailable, read_facts
from engine.providers.errors import ProviderError

FITTED_PROVIDERS = ("embedded", "ollama")


@dataclass(frozen=True)
class AgentFit:
    model_path: str
    num_ctx: int
    pinned: bool  # False: the window is the engine's own choice (the training length here)
    kv_cache_type: str
    kv_bytes: dict[str, int]  # per KV type
    total_bytes: int  # at the agent's KV type
    gpu_free_bytes: int | None
    verdict: str
    max_num_ctx_on_gpu: dict[str, int | None]
    model: dict[str, Any]


async def _gguf_of(agent: AgentConfig) -> str:
    if agent.provider == "embedded":
        from engine.providers.embedded import resolve_model_path

        return resolve_model_path(agent.model or None)
    from engine.providers.ollama import OllamaProvider
    from engine.providers.ollama_answers import runs_here

    provider = OllamaProvider(agent.base_url, timeout=10.0)
    try:
        if not runs_here(provider.base_url):
            raise FitUnavailable("Ollama runs on another machine: its model file is not here")
        blob = await provider.show_blob(agent.model)
    finally:
        await provider.aclose()
    if blob is None:
        raise FitUnavailable("Ollama's /api/show names no model file for this model")
    return blob


async def fit_for_agent(agent: AgentConfig, *, gpu_free: int | bool | None = True) -> AgentFit:
    """The estimate for `agent` as it stands. `gpu_free` True: ask NVML now. FitUnavailable
    (its text for the panel) when there is no file to read."""
    if agent.provider not in FITTED_PROVIDERS:
        raise FitUnavailable(
            f"the fit is estimated from the model file of the embedded engine or a local "
            f"Ollama; {agent.provider} keeps its model on its own server"
        )
    try:
        path = await _gguf_of(agent)
    except ProviderError as exc:
        raise FitUnavailable(exc.message) from None
    facts = read_facts(path)
    num_ctx = agent.num_ctx or facts.training_context or 4096
    embedded = agent.provider == "embedded"
    base = FitRequest(
        num_ctx, agent.kv_cache_type if embedded else "f16", 1, agent.gpu_layers,
        flash_attn=agent.flash_attn != "off", swa_full=embedded, all_logits=embedded,
    )  # fmt: skip
    free = gpu_free_bytes() if gpu_free is True else gpu_free
    free = None if isinstance(free, bool) else free
    ram = ram_available_bytes()
    chosen = estimate(facts, base, gpu_free=free, ram=ram)
    kv = {t: estimate(facts, replace(base, kv_cache_type=t), gpu_free=None, ram=None).kv_bytes
          for t in KV_TYPES}  # fmt: skip
    return AgentFit(
        model_path=path,
        num_ctx=num_ctx,
        pinned=agent.num_ctx is not None,
        kv_cache_type=base.kv_cache_type,
        kv_bytes=kv,
        total_bytes=chosen.total_bytes,
        gpu_free_bytes=free,
        verdict=chosen.verdict,
        max_num_ctx_on_gpu=chosen.max_num_ctx_on_gpu,
        model=facts.public(),
    )
