"""`bench kv_reuse_quick`'s real-vLLM case: Brim and the sliding window, each on a fresh
real vLLM (`.venv-vllm`, built by `make vllm-setup`; bench/_vllm_server.py) serving the
bundled SmolLM2 with a 2,048-token window, `--enable-prefix-caching
--enable-prompt-tokens-details` (and `--dtype float32 --enforce-eager`).

The figure is the same as on llama-server: the prompt tokens evaluated anew, `prompt_tokens
- cached_tokens` of every request, summed, as vLLM reports them. vLLM's prefix caching
reuses whole blocks only (128 tokens on this CPU build): a request that shares 300 tokens
with the one before is charged for the 44 past the second block, and a request that
changes anything in its first block (a sliding window dropping its oldest message does)
reuses nothing. vLLM has no chunk reuse (llama-server's `--cache-reuse`), so the sliding
window here is the one without it.

    KV_QUICK_VLLM=only python -m bench kv_reuse_quick
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from bench._vllm_server import running_vllm_server, unavailable
from bench.kv_reuse import RequestRecorder, Tally
from bench.kv_reuse_quick import MAX_TOKENS, Run, brim_run, sliding_run
from engine.config import default_agent
from engine.messages import Message
from engine.providers.base import ChatOptions, StreamItem
from engine.providers.embedded import default_model_path
from engine.providers.gguf_tokenizer import GgufTokenizer
from engine.providers.vllm import VllmProvider

WINDOW = 2048  # the server's --max-model-len
SERVED_NAME = "smol"
CLIENTS = ("brim", "sliding")


class RecordingVllmProvider(VllmProvider):
    """vLLM, recording every request that lands (its usage as vLLM reports it), and the
    last request the agent or the sliding window sent (the fact's check reads it)."""

    def __init__(self, tally: Tally, *, sliding: bool, base_url: str) -> None:
        super().__init__(base_url)
        # The converted folder is the same model: its vocabulary and template are the GGUF's.
        self.tokenizer = GgufTokenizer(default_model_path())
        self.recorder = RequestRecorder(tally, sliding=sliding, label="vllm")
        self.last_agent: list[Message] = []

    async def stream_chat(
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        if self.recorder.kind(messages) in ("agent", "sliding"):
            self.last_agent = list(messages)
        tokens = self.tokenizer.request_tokens(messages, list(options.tools) or None)
        stream = super().stream_chat(model, messages, options)
        async for item in self.recorder.recorded(stream, messages, tokens):
            yield item


async def _run(url: str, client: str, turns: list[str]) -> Run:
    tally = Tally()
    provider = RecordingVllmProvider(tally, sliding=client == "sliding", base_url=url)
    if client == "sliding":
        return await sliding_run(provider, tally, WINDOW, turns, "vllm sliding")
    agent = default_agent().with_changes(
        provider="vllm", base_url=url, model=SERVED_NAME, max_tokens=MAX_TOKENS
    )
    return await brim_run(agent, provider, tally, WINDOW, turns)


def on_vllm(client: str, turns: list[str]) -> Run:
    """One client's run on a fresh vLLM (an empty prefix cache)."""
    with (
        tempfile.TemporaryDirectory() as logs,
        running_vllm_server(Path(logs), served_name=SERVED_NAME, max_model_len=WINDOW) as server,
    ):
        return asyncio.run(_run(server.url, client, turns))


def vllm_runs(turns: list[str]) -> dict[str, Run] | str:
    """Each client's run, or why the case cannot run here."""
    reason = unavailable()
    if reason is not None:
        return reason
    return {client: on_vllm(client, turns) for client in CLIENTS}
