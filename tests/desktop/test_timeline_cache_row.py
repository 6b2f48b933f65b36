"""The rail's timeline has a row for the last request: what the engine's prompt cache served
of it, "reused N of M" where the engine reports it (llama-server), "cache: not reported"
where it does not (Ollama), never a 0 it did not say; a reopened conversation reads the same."""

from __future__ import annotations

import re
from typing import Any

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel


def _row(d: Any) -> str:
    return d.window.rail.timeline_row.text()


def test_the_timeline_row_says_how_much_of_the_last_request_the_cache_reused(
    qtbot: Any, real_desktop: Any, tmp_path: Any
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        chat_and_wait(qtbot, d, "Plan the garden")
        chat_and_wait(qtbot, d, "And the shed?")
        qtbot.waitUntil(lambda: _row(d).startswith("request 2 · "), timeout=10000)
        prompt = fake.chat_requests[-1].prompt_tokens
        row = _row(d)
        assert not d.window.rail.timeline_row.isHidden()
        # The second request began with the first one's prompt: the server reused it.
        found = re.fullmatch(r"request 2 · reused (\d+) of (\d+)", row)
        assert found is not None, row
        assert 0 < int(found.group(1)) < prompt and int(found.group(2)) == prompt, row
        assert row in d.window.rail.text()
        d.app.navigator.save_window()
        d.app.shutdown()
        again = real_desktop(home=tmp_path / "home")
        qtbot.waitUntil(lambda: _row(again) == row, timeout=10000)


def test_on_ollama_the_timeline_row_says_the_cache_was_not_reported(qtbot: Any, real_desktop: Any):
    with FakeOllama([OllamaModel("llama3.1:8b")]) as fake:
        toml = agent_toml("chat", fake.url, provider="ollama", num_ctx=4096)
        d = real_desktop(agents={"chat.toml": toml.replace('"fake"', '"llama3.1:8b"')})
        chat_and_wait(qtbot, d, "Plan the garden")
        qtbot.waitUntil(lambda: _row(d).startswith("request 1 · "), timeout=10000)
        assert _row(d) == "request 1 · cache: not reported"
        assert "reused 0" not in d.window.rail.text() and "0%" not in _row(d)
