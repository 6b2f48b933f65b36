"""The window Brim learns after the first answer reaches the window a user looks at: the
header switches from the assumed window to the served one and the transcript says so."""

from __future__ import annotations

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeOllama, OllamaModel


def test_the_header_and_transcript_follow_the_window_ollama_loaded_on_the_first_answer(
    qtbot, real_desktop
):
    with FakeOllama([OllamaModel("fake", context_length=131072)], default_num_ctx=8192) as fake:
        d = real_desktop(agents={"local.toml": agent_toml("local", fake.url, "ollama")})
        qtbot.waitUntil(lambda: "assumed" in d.window.header.text())
        assert "/4K" in d.window.header.text()
        assert "unknown until the first answer" in d.window.transcript.toPlainText()

        chat_and_wait(qtbot, d, "Hello there")

        qtbot.waitUntil(lambda: "server" in d.window.header.text())
        assert "/8K" in d.window.header.text()
        assert (
            "Ollama loaded fake with an 8,192-token window; Brim now compacts at 6,553."
            in d.window.transcript.toPlainText()
        )
