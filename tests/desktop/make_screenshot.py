"""Render the minimal window mid-conversation on a scripted session and save it as a PNG.

    python -m tests.desktop.make_screenshot [docs/screenshots/minimal-window.png]

It runs the real entry point (`desktop.app.main --send ... --screenshot ...`) with a fake
session in place of the model, so the picture shows exactly what the app draws.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from desktop.app import main
from engine.events import EventSink
from engine.messages import assistant, notice, user
from tests.helpers.fake_session import FakeSession, FakeTurn

DEFAULT_OUT = Path("docs/screenshots/minimal-window.png")

HISTORY = [
    notice("Embedded engine: SmolLM2-135M-Instruct, window 8K (model-max)"),
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


def fake_factory(sink: EventSink) -> FakeSession:
    return FakeSession(
        sink,
        history=list(HISTORY),
        window=8192,
        source="model-max",
        agent_name="default",
        model="SmolLM2-135M-Instruct",
        turns=[
            FakeTurn(
                deltas=_chunks(ANSWER),
                delay_s=0.002,
                prompt_tokens=612,
                completion_tokens=58,
                elapsed_s=4.3,
            )
        ],
    )


def make_screenshot(out: Path = DEFAULT_OUT) -> int:
    return main(
        [
            "--send",
            "Show me a Python one-liner that counts the words in a file.",
            "--screenshot",
            str(out),
        ],
        session_factory=fake_factory,
    )


if __name__ == "__main__":
    sys.exit(make_screenshot(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
