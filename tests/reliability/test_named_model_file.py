"""A model file that is a FIFO does not stop Brim.

An Ollama on this machine names its model's GGUF in `/api/show` (`FROM /…/blobs/sha256-…`),
and Brim opens it to count exactly. Before, a `FROM` naming a FIFO blocked Brim in open():
it answered nothing and ignored SIGTERM, only SIGKILL ended it. Now the file is refused,
Brim counts by estimate and says why in `/context`, and SIGTERM ends it as always.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.fake_engines import FakeOllama, OllamaModel
from tests.reliability.headless import Headless, answered, errors

MODEL = "llama3.1:8b"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_as_the_model_file_is_refused_and_sigterm_still_ends_brim(tmp_path: Path):
    fifo = tmp_path / "sha256-fifo"
    os.mkfifo(fifo)
    with FakeOllama([OllamaModel(MODEL, context_length=8192, blob=str(fifo))]) as fake:
        flags = ["--provider", "ollama", "--model", MODEL, "--base-url", fake.url]
        brim = Headless(tmp_path / "home", flags)
        try:
            brim.ready(timeout=30)
            first = brim.turn("hello", timeout=30)
            assert errors(first) == [] and answered(first) == "Hello from the fake engine."
            assert brim.proc.stdin is not None
            brim.proc.stdin.write("/context\n")
            brim.proc.stdin.flush()
            report = brim.until(("context_report",), timeout=30)[-1]
            while not report["snapshot"]:
                report = brim.until(("context_report",), timeout=30)[-1]
            assert f"the model file Ollama names ({fifo}) is a FIFO" in report["counting"]
            started = time.monotonic()
            brim.proc.send_signal(signal.SIGTERM)
            code = brim.proc.wait(30)
            took = time.monotonic() - started
        finally:
            brim.close()
    assert code == 143, brim.stderr_tail()
    assert took < 8.0, f"SIGTERM took {took:.1f} s"
    assert "Traceback" not in brim.stderr, brim.stderr_tail()
