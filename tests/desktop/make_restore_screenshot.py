"""What a compaction replaced, opened from its row, with the restore waiting for a yes.

    QT_QPA_PLATFORM=offscreen python -m tests.desktop.make_restore_screenshot [OUT_DIR]

Writes compaction-restore.png (default folder docs/screenshots): a trip-planning chat on a
2K window, the automatic compaction's row, its Show / Restore clicked, and Restore pressed:
the history put back would pass the auto-compact mark, so the view asks again with the
engine's figures. The real app on a temporary data folder, the agent pointed at a fake
llama-server; every figure comes from the engine.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtCore import QUrl

from desktop.app import ensure_application
from desktop.screenshot import grab_window
from engine.paths import BrimPaths
from tests.desktop.make_screenshots import close, pump_for, pump_until, send, start
from tests.engine.memory.fakes import role_of
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply

DEFAULT_OUT = Path("docs/screenshots")
MODEL = "SmolLM2-360M-Instruct-Q8_0"

SAID = [
    "I am planning a trip to Lisbon with my sister in May. We want four days there.",
    "My budget for the whole trip is 1200 euros, flights included, for both of us.",
    "I am allergic to peanuts, so any food tips must leave them out.",
    "Which neighbourhood should we stay in if we like walking and old streets?",
    "How do we get from the airport to Alfama without a car?",
    "What is one day trip from Lisbon that is worth the train ride?",
    "Which museum would you pick if we only have one afternoon?",
    "Where can we hear fado without paying for a tourist dinner show?",
    "Is a Lisboa Card worth it for four days of mostly walking?",
    "Which viewpoint is best at sunset, and how early should we get there?",
    "What should we pack for May evenings by the river?",
    "Where can my sister buy tiles to take home that are not mass-produced?",
]

ANSWER = (
    "Alfama suits you: steep lanes, the castle above it and short walks to the river. "
    "Stay near Largo do Chafariz de Dentro so the trams and the metro are close, and "
    "keep the evenings for the viewpoints at Portas do Sol and Graça. "
)

SUMMARY = """## Goal
Plan a four-day trip to Lisbon in May.
## Constraints & Preferences
- Budget 1200 euros, flights included.
## Covered So Far
- (none)
## Progress
### Done
- Suggested a neighbourhood and how to reach it.
### In Progress
- (none)
### Blocked
- (none)
## Key Decisions
- Stay in Alfama.
## Next Steps
- Suggest a day trip.
## Critical Context
- (none)
"""


def restore_shot(root: Path, out: Path) -> Path:
    paths = BrimPaths.under(root / "home")
    paths.agents_dir.mkdir(parents=True)
    with FakeLlamaServer(n_ctx=2048, slots=1, model=MODEL) as fake:

        def respond(request: Any) -> Reply:
            if is_compaction(request.body):
                return Reply(text=SUMMARY)
            if role_of(request.body) == "extractor":
                return Reply(text='{"memories": [], "lessons": []}')
            return Reply(text=ANSWER * 2)

        fake.responder = respond
        (paths.agents_dir / "trips.toml").write_text(
            f'name = "trips"\nprovider = "llamacpp"\nbase_url = "{fake.url}"\n'
            f'model = "{MODEL}"\nsystem_prompt = "You help plan trips."\n'
        )
        # No folder: a chat has no file tools, whose schemas would take ~1,700 of the 2K
        # window on the model's template (SmolLM2's) and leave no history to compact.
        app = start(paths, None)
        try:
            window = app.window
            for text in SAID:
                send(app, text)
                if any(r.ref for r in window.transcript.rows()):
                    break
            row = next(r for r in window.transcript.rows() if r.ref)
            window.transcript.anchorClicked.emit(QUrl(f"compaction:{row.ref}"))
            pump_until(lambda: window.overlay.compaction_view() is not None)
            view = window.overlay.compaction_view()
            assert view is not None
            view.restore_button.click()  # past the auto-compact mark: it asks again
            pump_for(0.3)
            shot = grab_window(window, out / "compaction-restore.png")
        finally:
            close(app)
    return shot


def make_restore_screenshot(out: Path = DEFAULT_OUT) -> Path:
    ensure_application()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="brim-restore-shot-") as tmp:
        return restore_shot(Path(tmp), out)


if __name__ == "__main__":
    print(make_restore_screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
