"""Whether a llama-server moves cached chunks to new positions is found by asking it (two
short completions read by `timings.cache_n`), not from the model's name: a model whose
memory cannot shift (sliding-window, hybrid, recurrent) is served the common prefix only."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from engine.providers.llamacpp import LlamaCppProvider
from engine.providers.llamacpp_reuse_probe import KEPT, PROBE_CHUNK
from tests.helpers.fake_engines import FakeLlamaServer, tokenize

pytestmark = pytest.mark.anyio
MODEL = "SmolLM2-135M-Instruct-Q4_1"


async def _learn(fake: FakeLlamaServer, model: str = MODEL, times: int = 1) -> Any:
    provider = LlamaCppProvider(fake.url)
    try:
        for _ in range(times):
            found = await provider.learn_cache_reuse(model)
        return found, provider.cache_reuse(model)
    finally:
        await provider.aclose()


async def test_a_server_that_moves_the_kept_part_is_found_to_reuse_its_cache(anyio_backend):
    with FakeLlamaServer() as fake:
        found, remembered = await _learn(fake)
    assert found.reuses is True and remembered == found
    assert found.moved is not None and found.moved >= len(tokenize(KEPT)) - 8
    assert found.line() == "Cache reuse at new positions: yes (probed)"


async def test_a_sliding_window_model_is_found_to_serve_the_prefix_only(anyio_backend):
    with FakeLlamaServer(can_shift=False) as fake:
        found, _ = await _learn(fake)
    assert found.reuses is False
    assert found.cached == found.common_prefix  # the prefix, and not a token more
    assert found.line() == "Cache reuse at new positions: no (probed)"


async def test_the_probe_runs_once_per_model_of_a_server(anyio_backend):
    with FakeLlamaServer() as fake:
        await _learn(fake, times=3)
        assert len(fake.requests_to("/completion")) == 2  # one probe: its two requests
        # Each completion kept cheap: a few hundred tokens, one generated.
        assert all(r.prompt_tokens < 250 for r in fake.requests_to("/completion"))
        assert all(r.body["n_predict"] == 1 for r in fake.requests_to("/completion"))


class _NoTimings(FakeLlamaServer):
    def timings(self, prompt: int, cached: int, completion: int) -> dict[str, Any] | None:
        return None


async def test_a_server_that_does_not_report_cache_n_is_not_probed(anyio_backend):
    with _NoTimings() as fake:
        found, _ = await _learn(fake)
    assert found.reuses is None
    assert found.line() == "Cache reuse at new positions: not probed"


async def test_a_server_without_the_completion_endpoint_is_not_probed(anyio_backend):
    with FakeLlamaServer() as fake:
        fake.override("/completion", 404, b'{"error":{"code":404}}')
        found, _ = await _learn(fake)
    assert found.reuses is None and "failed" in found.reason


def _chat(url: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    body = {"model": MODEL, "messages": messages, "n_cache_reuse": PROBE_CHUNK}
    answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10).json()
    return answer["timings"]


@pytest.mark.parametrize("can_shift", [True, False])
def test_the_fake_servers_chat_cache_moves_a_kept_turn_only_where_the_model_can_shift(
    can_shift: bool,
):
    """The double follows the real rule on the chat path too: a dropped turn's successors
    come from the cache where the memory shifts, and are evaluated again where it cannot."""
    old = {"role": "user", "content": "An old turn to drop. " * 20}
    kept = {"role": "user", "content": "A turn that stays, word for word. " * 20}
    system = {"role": "system", "content": "You are terse."}
    with FakeLlamaServer(can_shift=can_shift) as fake:
        _chat(fake.url, [system, old, {"role": "assistant", "content": "ok"}, kept])
        second = _chat(fake.url, [system, kept])
    if can_shift:
        assert second["cache_n"] > len(tokenize(kept["content"]))
    else:
        assert second["cache_n"] < 20  # the system prompt's prefix only
