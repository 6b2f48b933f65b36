"""The bundled model keeping the task: the trip conversation on a 1,024-token window.

    python -m tests.desktop.make_small_model_screenshot [OUT_DIR]   # minutes, real model

Writes small-model-after-compaction.png (default folder docs/screenshots) and, beside it,
small-model-after-compaction.txt: the transcript as the window shows it, then the live
conversation as the model is sent it. The real app on a temporary data folder, the default
agent on the embedded engine with SmolLM2, `num_ctx = 1024` and answers capped at 96 tokens
(the engine's own sampling): the user states three facts, asks short questions about the
trip until the window has compacted twice, then asks about each fact and an ordinary
question. Nothing in it is scripted but the user's lines.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from desktop.app import DesktopApp, ensure_application
from desktop.screenshot import grab_window
from engine.events import CompactionEvent
from engine.messages import model_messages
from engine.paths import BrimPaths
from engine.store import Store
from tests.desktop.make_screenshots import close, pump_for, pump_until, start

DEFAULT_OUT = Path("docs/screenshots")
NAME = "small-model-after-compaction"
WINDOW = 1024
COMPACTIONS = 2

FACTS = [
    "I am planning a trip to Lisbon with my sister in May.",
    "My budget for the whole trip is 1200 euros.",
    "I am allergic to peanuts, so keep that in mind for restaurants.",
]
TRIP = [
    "Which neighbourhood is good for walking?",
    "How do we get from the airport to the centre?",
    "What is one day trip worth taking?",
    "Which museum should we see first?",
    "Where can we hear fado?",
    "What should we pack for May?",
    "Is the tram worth it?",
    "What is a good first dinner?",
    "Which viewpoint has the best sunset?",
    "How many days are enough?",
    "Which market is worth a morning?",
    "Where do locals eat pastries?",
    "Is Sintra better by train or bus?",
    "What is a quiet beach near the city?",
    "Which church should we not miss?",
    "Where is a good place for coffee?",
    "What is a good gift to bring home?",
    "Which bookshop is the oldest?",
]
ASKED = [
    "Which city am I planning to visit, and with whom?",
    "What is my budget for the whole trip?",
    "Which food must I avoid?",
    "What is 12 times 12?",
]


TURN_LIMIT_S = 900.0  # a turn with a compaction and memory's requests, on a busy machine


def send(app: DesktopApp, text: str) -> None:
    app.window.composer.setPlainText(text)
    QTest.keyClick(app.window.composer, Qt.Key.Key_Return)
    pump_until(lambda: not app.bridge.busy, timeout=TURN_LIMIT_S)


def _agent_file() -> str:
    return (
        'name = "default"\nprovider = "embedded"\nmodel = ""\n'
        f"num_ctx = {WINDOW}\nmax_tokens = 96\n"  # the engine's own sampling, as a user gets
    )


def small_model_shot(root: Path, out: Path) -> tuple[Path, Path]:
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    (paths.agents_dir / "default.toml").write_text(_agent_file(), encoding="utf-8")
    app = start(paths, root)
    compactions = 0

    def count(event: object) -> None:
        nonlocal compactions
        if isinstance(event, CompactionEvent) and event.phase == "finished":
            compactions += 1

    app.bridge.event.connect(count)
    try:
        for text in FACTS:
            send(app, text)
        for text in TRIP:
            if compactions >= COMPACTIONS:
                break
            send(app, text)
        for text in ASKED:
            send(app, text)
        window = app.window
        window.transcript.verticalScrollBar().setValue(
            window.transcript.verticalScrollBar().maximum()
        )
        pump_for(0.3)
        shot = grab_window(window, out / f"{NAME}.png")
        text = out / f"{NAME}.txt"
        assert app.navigator is not None
        with Store.open(paths.db_path) as store:
            sent = model_messages(store.messages(app.navigator.conversation_id))
        lines = [
            f"compactions: {compactions}",
            "",
            window.transcript.toPlainText(),
            "",
            "--- the live conversation as the model is sent it (the checkpoint's model face):",
            *(f"[{m.role}] {m.content}" for m in sent),
        ]
        text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    finally:
        close(app)
    return shot, text


def make_small_model_screenshot(out: Path = DEFAULT_OUT) -> tuple[Path, Path]:
    ensure_application()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brim-small-model-shot-") as tmp:
        return small_model_shot(Path(tmp), out)


if __name__ == "__main__":
    print(*make_small_model_screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
