"""The sampler settings in the agent editor: shown with the file's values, saved to the file,
sampled with by the engine on the next request; a blank one says, once the engine is asked,
what it is and whose (the model's, the engine's); a bad value is refused in its field with its
range, and nothing is written."""

from __future__ import annotations

from tests.desktop.test_agent_editor import (
    VLLM_MODEL,
    chat,
    commented_agent,
    open_editor,
    probe,
    save_and_wait_for_the_new_session,
    type_into,
)
from tests.helpers.fake_engines import FakeOllama, FakeVllm
from tests.helpers.fake_ollama import OllamaModel


def test_the_editor_shows_the_sampling_and_a_saved_change_reaches_the_engine(qtbot, real_desktop):
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as vllm:
        text = commented_agent("q", "vllm", vllm.url, VLLM_MODEL) + "top_k = 30\nseed = 9\n"
        d = real_desktop(agents={"q.toml": text})
        dialog = open_editor(qtbot, d)
        shown = {
            name: dialog.field(name).text()
            for name in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed")
        }
        assert shown == {
            "temperature": "0.2",  # the file's
            "top_p": "",  # left to the model
            "top_k": "30",
            "min_p": "",
            "repeat_penalty": "",
            "seed": "9",
        }
        type_into(qtbot, dialog, "top_p", "0.7")
        type_into(qtbot, dialog, "top_k", "0")
        type_into(qtbot, dialog, "repeat_penalty", "1.2")
        type_into(qtbot, dialog, "seed", "")  # blank: a new seed for every answer
        save_and_wait_for_the_new_session(qtbot, d, dialog)
        chat(qtbot, d, "Hello")
        applied = vllm.chat_requests[-1].sampling

    saved = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
    assert "top_p = 0.7\n" in saved and "top_k = 0\n" in saved
    assert "repeat_penalty = 1.2\n" in saved and "seed" not in saved
    assert "# Keep answers short.\ntemperature = 0.2\n" in saved
    assert applied == {
        "temperature": 0.2,
        "top_p": 0.7,
        "top_k": -1,
        "min_p": 0.0,  # left unset: vLLM's own (the model folder is not one Brim can read)
        "repetition_penalty": 1.2,
        "seed": None,
    }


def test_a_bad_sampling_value_is_refused_in_its_field_with_its_range_and_nothing_is_saved(
    qtbot, real_desktop
):
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as vllm:
        d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
        before = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
        dialog = open_editor(qtbot, d)
        type_into(qtbot, dialog, "temperature", "hot")
        type_into(qtbot, dialog, "top_p", "3")
        type_into(qtbot, dialog, "top_k", "-1")
        assert dialog.problem_text("temperature") == "Must be a number from 0 to 5, got 'hot'"
        assert dialog.problem_text("top_p") == "Must be a number from 0.01 to 1, got 3.0"
        assert dialog.problem_text("top_k") == "Must be an integer from 0 to 100000, got -1"
        assert not dialog.save_button.isEnabled()
        assert dialog.field("temperature").text() == "hot"  # what was typed stays to be fixed
        dialog.reject()
    assert (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8") == before


def test_a_blank_sampling_field_says_the_models_value_once_the_engine_is_asked(qtbot, real_desktop):
    qwen = OllamaModel(
        "qwen3:8b",
        parameters={"temperature": 0.6, "top_k": 20, "top_p": 0.95},
        capabilities=("completion", "tools", "thinking"),
    )
    with FakeOllama([qwen]) as ollama:
        text = commented_agent("q", "ollama", ollama.url, "qwen3:8b").replace(
            "temperature = 0.2\n", "top_p = 0.5\n"
        )
        d = real_desktop(agents={"q.toml": text})
        dialog = open_editor(qtbot, d)
        probe(qtbot, dialog)
        placeholders = {
            name: dialog.field(name).placeholderText()
            for name in ("temperature", "top_p", "top_k", "min_p", "seed")
        }
        dialog.reject()
    assert placeholders == {
        "temperature": "blank: model's: 0.6",
        "top_p": "blank: model's: 0.95",  # what a blank would be; the file says 0.5
        "top_k": "blank: model's: 20",
        "min_p": "blank: engine default",
        "seed": "blank: a new seed for every answer",
    }


def test_a_thinking_model_made_greedy_is_warned_about_in_the_editor(qtbot, real_desktop):
    qwen = OllamaModel("qwen3:8b", capabilities=("completion", "tools", "thinking"))
    with FakeOllama([qwen]) as ollama:
        text = commented_agent("q", "ollama", ollama.url, "qwen3:8b").replace(
            "temperature = 0.2", "temperature = 0.0"
        )
        d = real_desktop(agents={"q.toml": text})
        dialog = open_editor(qtbot, d)
        probe(qtbot, dialog)
        warnings = dialog.warning_texts()
        dialog.reject()
    assert any("thinks before it answers" in w and "temperature 0" in w for w in warnings)
