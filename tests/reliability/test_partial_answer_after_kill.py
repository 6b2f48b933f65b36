"""kill -9 in the middle of an answer: the reopened conversation keeps what the user had
already watched arrive, marked partial, and says that the answer was interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine.paths import BrimPaths
from engine.session.answer_draft import INTERRUPTED
from engine.store import Store
from tests.helpers.fake_engines import FakeLlamaServer, Reply

STORY = " ".join(f"word{i}" for i in range(400))


def _brim(home: Path, url: str, *extra: str) -> list[str]:
    args = [sys.executable, "-m", "engine.cli", "--data-dir", str(home), "chat", "--headless"]
    return [*args, "--provider", "llamacpp", "--model", "fake", "--base-url", url, *extra]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "BRIM_HOME"}


def test_an_answer_cut_by_kill_9_comes_back_partial_with_a_notice(tmp_path: Path):
    home = tmp_path / "home"
    with FakeLlamaServer(n_ctx=8192, slots=1) as fake:
        fake.script(Reply(text=STORY, token_delay=0.05))
        proc = subprocess.Popen(
            _brim(home, fake.url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(),
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("Tell me a long story.\n")
        proc.stdin.flush()
        seen: list[str] = []
        conversation = ""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            conversation = event.get("conversation") or conversation
            if event.get("type") == "delta":
                seen.append(event["text"])
            if len(seen) >= 40:
                time.sleep(1.0)  # the draft is written at most every half second
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdin.close()
        proc.stdout.close()
        assert len(seen) >= 40 and conversation, "the answer never streamed"
        watched = "".join(seen)

        reopened = subprocess.run(
            _brim(home, fake.url, "--conversation", conversation),
            input="",
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(),
        )
        assert reopened.returncode == 0, reopened.stderr

    with Store.open(BrimPaths.under(home).db_path) as store:
        messages = store.messages(conversation)
    assert [m.role for m in messages][-3:] == ["user", "assistant", "notice"]
    partial, said = messages[-2], messages[-1]
    assert partial.meta_value("partial")
    assert partial.content.startswith(watched[: len(watched) // 2])  # what the user saw, at least
    assert STORY.startswith(partial.content)
    assert said.content == INTERRUPTED
