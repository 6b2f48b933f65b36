"""The agent editor's Reasoning setting (issue 49): offered as its choices, saved to the
agent file, and carried by the agent's requests from the next one on."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QComboBox

from tests.desktop.test_agent_editor import (
    VLLM_MODEL,
    commented_agent,
    open_editor,
    save_and_wait_for_the_new_session,
)
from tests.helpers.fake_engines import FakeVllm


@pytest.fixture
def vllm() -> Any:
    with FakeVllm(VLLM_MODEL, max_model_len=32768) as fake:
        yield fake


def test_the_reasoning_setting_is_offered_and_saved(qtbot: Any, real_desktop: Any, vllm: Any):
    d = real_desktop(agents={"q.toml": commented_agent("q", "vllm", vllm.url, VLLM_MODEL)})
    dialog = open_editor(qtbot, d)
    combo = dialog.field("reasoning")
    assert isinstance(combo, QComboBox)
    choices = [combo.itemText(i) for i in range(combo.count())]
    assert choices == ["default", "off", "on", "low", "medium", "high"]
    assert combo.currentText() == "default"
    combo.setCurrentText("low")
    save_and_wait_for_the_new_session(qtbot, d, dialog)
    saved = (d.paths.agents_dir / "q.toml").read_text(encoding="utf-8")
    assert 'reasoning = "low"' in saved
