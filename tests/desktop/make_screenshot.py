"""Render the minimal window mid-conversation over a scripted engine and save it as a PNG.

    python -m tests.desktop.make_screenshot [docs/screenshots/minimal-window.png]

It runs the real entry point (`desktop.app.main --send ... --screenshot ...`) on the engine's
own session over a scripted in-process engine (tests/helpers/scripted_session.py) in place of
the model, so the picture shows exactly what the app draws.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from desktop.app import main
from engine.messages import assistant, notice, user
from tests.helpers.fake_provider import InProcessEngine
from tests.helpers.scripted_session import ScriptedSessions

DEFAULT_OUT = Path("docs/screenshots/minimal-window.png")

HISTORY = [
    notice("llama-server serves SmolLM2-135M-Instruct with a window of 8K (server)"),
    user("What does the context window mean for a model running on my machine?"),
    assistant(
        "It is the number of tokens the model can attend to at once: the system prompt, "
        "the whole conversation so far and the answer being written all have to fit.\n\n"
        "- **Ollama** serves whatever `num_ctx` it loaded the model with.\n"
        "- **llama-server** splits its `-c` window between its slots.\n"
        "- **vLLM** and **SGLang** report `max_model_len` for each model.\n\n"
        "Brim asks the engine and shows the result in the header."
    ),
]

ANSWER = (
    "Here is one way, using only the standard library:\n\n"
    "```python\n"
    "from pathlib import Path\n\n"
    'print(len(Path("notes.txt").read_text().split()))\n'
    "```\n\n"
    "`split()` with no argument splits on any run of whitespace, so blank lines and "
    "tabs do not count as words."
)


def _chunks(text: str, size: int = 6) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def scripted_sessions(root: Path) -> ScriptedSessions:
    """The conversation above, saved under `root`, and the answer the engine streams next."""
    sessions = ScriptedSessions.on(root, InProcessEngine(window=8192), history=list(HISTORY))
    sessions.engine.script(deltas=_chunks(ANSWER), delay_s=0.002)
    return sessions


def make_screenshot(out: Path = DEFAULT_OUT) -> int:
    with tempfile.TemporaryDirectory(prefix="brim-shot-") as root:
        return main(
            [
                "--send",
                "Show me a Python one-liner that counts the words in a file.",
                "--screenshot",
                str(out),
            ],
            session_factory=scripted_sessions(Path(root)).factory,
        )


if __name__ == "__main__":
    sys.exit(make_screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
