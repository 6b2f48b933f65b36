"""The window an unpinned Ollama model is loaded with reaches the window a user looks at: the
model is loaded at the start, so the header shows the served window before the first
message; where that load fails, the header switches from the assumed window to the served
one after the first answer, and the transcript says so."""

from __future__ import annotations

from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.fake_engines import FakeOllama, OllamaModel
from tests.helpers.fake_ollama import OUT_OF_MEMORY


def test_the_header_shows_the_window_ollama_loaded_the_model_with_before_the_first_message(
    qtbot, real_desktop
):
    with FakeOllama([OllamaModel("fake", context_length=131072)], default_num_ctx=8192) as fake:
        d = real_desktop(agents={"local.toml": agent_toml("local", fake.url, "ollama")})
        qtbot.waitUntil(lambda: "server" in d.window.header.text())
        assert "/8K" in d.window.header.text()
        assert "unknown until the first answer" not in d.window.transcript.toPlainText()


def test_the_header_and_transcript_follow_the_window_ollama_loaded_on_the_first_answer(
    qtbot, real_desktop
):
    with FakeOllama(
        [OllamaModel("fake", context_length=131072)],
        default_num_ctx=8192,
        refuse_loads=OUT_OF_MEMORY,
    ) as fake:
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
