"""The receipt says what the engine's prompt cache served of the turn's request: "reused N
of M" where the engine reports it (llama-server's `cache_n`), "cache: not reported" where it
does not (Ollama), never a 0 it did not say; and a reopened conversation reads the same."""

from __future__ import annotations

from typing import Any

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel


def _receipts(d: Any) -> list[str]:
    return [r.text for r in d.window.transcript.rows() if r.kind == "receipt"]


def test_a_llama_server_receipt_says_how_much_of_the_prompt_its_cache_reused(
    qtbot: Any, real_desktop: Any, tmp_path: Any
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, d, "Plan the garden")
        chat_and_wait(qtbot, d, "And the shed?")
        receipts = _receipts(d)
        assert len(receipts) == 2
        # The second request began with the first one's prompt: the server reused it.
        assert " • reused " in receipts[1] and " • reused 0 " not in receipts[1], receipts[1]
        d.app.navigator.save_window()
        d.app.shutdown()
        again = real_desktop(home=tmp_path / "home")
        qtbot.waitUntil(lambda: len(_receipts(again)) == 2, timeout=10000)
        assert _receipts(again) == receipts


def test_an_ollama_receipt_says_the_cache_was_not_reported(qtbot: Any, real_desktop: Any):
    with FakeOllama([OllamaModel("llama3.1:8b")]) as fake:
        toml = agent_toml("chat", fake.url, provider="ollama", num_ctx=4096)
        d = real_desktop(agents={"chat.toml": toml.replace('"fake"', '"llama3.1:8b"')})
        chat_and_wait(qtbot, d, "Plan the garden")
        (receipt,) = _receipts(d)
        assert receipt.endswith(" • cache: not reported")
        assert "reused 0" not in receipt
