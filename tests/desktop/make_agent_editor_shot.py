"""The agent editor after a probe, for the README: the real app, a fake Ollama, one PNG.

    QT_QPA_PLATFORM=offscreen python -m tests.desktop.make_agent_editor_shot [OUT_DIR]

Writes agent-editor.png (default folder docs/screenshots). The app starts on a temporary
data folder whose agent pins num_ctx 8192 on an Ollama that has the model loaded at that
size; the editor is opened with `/agent`, the pin is raised past the model's training length,
and Probe asks the engine. Every figure and warning in the picture comes from the engine.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.agent_editor import DIALOG_SIZE
from desktop.app import DesktopApp, ensure_application
from engine.paths import BrimPaths
from tests.desktop.make_screenshots import close, pump_for, pump_until
from tests.helpers.fake_engines import FakeOllama, OllamaModel

DEFAULT_OUT = Path("docs/screenshots")
MODEL = "qwen2.5-coder:7b"
AGENT = f"""# The coding agent: Qwen2.5-Coder on the Ollama of this machine.

name = "coder"
provider = "ollama"
base_url = "{{url}}"
model = "{MODEL}"

# Pinned: Ollama's own default would be far smaller.
num_ctx = 8192

system_prompt = "You are a careful coding assistant. Prefer the standard library."
"""


def agent_editor_shot(root: Path, out: Path) -> Path:
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    models = [
        OllamaModel(MODEL, arch="qwen2", context_length=32768, family="qwen2"),
        OllamaModel("qwen2.5:3b", arch="qwen2", context_length=32768, family="qwen2"),
        OllamaModel("llama3.1:8b"),
    ]
    with FakeOllama(models) as fake:
        fake.load(MODEL, 8192)
        (paths.agents_dir / "coder.toml").write_text(
            AGENT.replace("{url}", fake.url), encoding="utf-8"
        )
        app = DesktopApp(paths=paths, reflect_on_close=False)
        try:
            app.window.resize(1280, 800)
            app.window.show()
            pump_until(lambda: app.window.header.state() == "ready")
            editing = app.agent_editing
            assert editing is not None
            app.window.composer.setPlainText("/agent")
            QTest.keyClick(app.window.composer, Qt.Key.Key_Return)
            pump_until(lambda: editing.dialog is not None)
            dialog = editing.dialog
            assert dialog is not None
            model = dialog.field("model")
            pump_until(lambda: model.count() == len(models))  # type: ignore[attr-defined]
            for name, text in (
                ("num_ctx", "40960"),
                ("max_context_tokens", "32768"),
                ("summarizer_model", "qwen2.5:3b"),
                ("max_iterations", "40"),
            ):
                widget = dialog.field(name)
                editor = getattr(widget, "lineEdit", lambda w=widget: w)()
                editor.setFocus()
                editor.selectAll()
                QTest.keyClicks(editor, text)
            QTest.keyClick(dialog, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)
            pump_until(lambda: dialog.comparison is not None and not dialog.probing())
            dialog.field("num_ctx").setFocus()
            dialog.resize(*DIALOG_SIZE)
            pump_for(0.2)
            out.mkdir(parents=True, exist_ok=True)
            target = out / "agent-editor.png"
            if not dialog.grab().save(str(target)):
                raise OSError(f"could not write {target}")
            dialog.reject()
            pump_for(0.05)
            return target
        finally:
            close(app)


def make_agent_editor_shot(out: Path = DEFAULT_OUT) -> Path:
    ensure_application()
    with tempfile.TemporaryDirectory(prefix="brim-shot-") as tmp:
        return agent_editor_shot(Path(tmp), out)


if __name__ == "__main__":
    print(make_agent_editor_shot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
