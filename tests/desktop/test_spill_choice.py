"""on_spill = "ask" in the window: the choice is a notice row with two buttons; Lower the pin
makes the next request ask the engine for the window that stays on the GPU (the real session
and an Ollama double that has half the model on the CPU at the pin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.providers.embedded import default_model_path
from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.desktop.test_continue import _click_text
from tests.helpers.fake_engines import FakeOllama, OllamaModel

MIB = 1024 * 1024


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    blob = default_model_path()
    if blob is None or not Path(blob).exists():
        pytest.skip("the bundled GGUF is not installed")
    spilling = OllamaModel(
        "fake", context_length=8192, blob=blob, size=400 * MIB, size_vram=200 * MIB
    )
    with FakeOllama([spilling]) as fake:
        fake.script_reply("Hello.")
        fake.script_reply("Hello again.")
        yield fake


def _agent(url: str) -> str:
    return agent_toml("gpu", url, provider="ollama", num_ctx=8192, on_spill="ask")


def test_lower_the_pin_in_the_choice_row_makes_the_next_request_ask_for_what_fits(
    qtbot: Any, real_desktop: Any, ollama: FakeOllama
) -> None:
    d = real_desktop(agents={"gpu.toml": _agent(ollama.url)})
    d.window.resize(1280, 800)
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
    chat_and_wait(qtbot, d, "hello")
    view = d.window.transcript
    qtbot.waitUntil(lambda: "▼ Lower the pin to" in view.toPlainText(), timeout=5_000)
    assert "Keep the pin" in view.toPlainText()
    shown = view.toPlainText()
    fits = int(shown.split("▼ Lower the pin to ")[1].split()[0].replace(",", ""))
    assert 0 < fits < 8192

    _click_text(qtbot, view, "▼ Lower the pin to")
    qtbot.waitUntil(lambda: "As chosen: num_ctx 8,192" in view.toPlainText(), timeout=5_000)
    assert "▼ Lower the pin to" not in view.toPlainText()  # answered: the buttons are gone
    chat_and_wait(qtbot, d, "and again")
    sent = [r.body["options"]["num_ctx"] for r in ollama.chat_requests]
    assert sent == [8192, fits]


def test_keep_the_pin_takes_the_buttons_away_and_changes_nothing(
    qtbot: Any, real_desktop: Any, ollama: FakeOllama
) -> None:
    d = real_desktop(agents={"gpu.toml": _agent(ollama.url)})
    qtbot.waitUntil(lambda: d.window.header.state() == "ready", timeout=10_000)
    chat_and_wait(qtbot, d, "hello")
    view = d.window.transcript
    qtbot.waitUntil(lambda: "Keep the pin" in view.toPlainText(), timeout=5_000)
    _click_text(qtbot, view, "Keep the pin")
    qtbot.waitUntil(lambda: "Keep the pin" not in view.toPlainText(), timeout=5_000)
    chat_and_wait(qtbot, d, "and again")
    assert [r.body["options"]["num_ctx"] for r in ollama.chat_requests] == [8192, 8192]
