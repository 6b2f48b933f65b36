"""The window's `/context` overlay says what every answer is sampled with, and whose each
value is (the agent's here: the file sets every one)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from tests.desktop.conftest import agent_toml
from tests.helpers.fake_engines import FakeLlamaServer


def test_the_context_overlay_lists_the_sampling_in_force(qtbot: Any, real_desktop: Any):
    with FakeLlamaServer(n_ctx=4096) as fake:
        agent = agent_toml(
            "alpha",
            fake.url,
            temperature=0.4,
            top_p=0.85,
            top_k=0,
            min_p=0.02,
            repeat_penalty=1.15,
            seed=3,
        )
        d = real_desktop(agents={"a.toml": agent})
        d.window.composer.setPlainText("/context")
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: d.window.overlay.isVisible(), timeout=5000)
        view = d.window.overlay.context_view
        assert view is not None and view.sampling.isVisibleTo(d.window.overlay)
        assert (
            "Sampling: temperature 0.4 (agent) · top_p 0.85 (agent) · top_k off (agent) · "
            "min_p 0.02 (agent) · repeat_penalty 1.15 (agent) · seed 3 (agent)"
        ) in d.window.overlay.text()
