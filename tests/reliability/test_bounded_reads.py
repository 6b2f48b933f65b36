"""Every read from an engine is bounded: what an engine sends cannot fill Brim's memory.

A real headless `brim` against loopback doubles that send what no engine should: one line
of 400 MB that gzip carries in some 400 KB, an error body that does not end, and an answer
that ignores `max_tokens` and goes on for ever. Each ends its turn (a `protocol_error`
naming the engine and what was too big, or the answer stopped at the output cap with a
notice), the next line is answered, and the peak memory of the `brim` process (VmHWM) stays
within MAX_GROWTH_MB of what it was before. The figures are printed (`pytest -s`) for the
README's reliability table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeServer, OllamaModel
from tests.helpers.fake_hostile import endless, gzip_flood, gzip_headers, hostile
from tests.reliability.headless import Headless, answered, errors

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak memory is read from /proc"
)

MAX_GROWTH_MB = 100
OK = "Hello from the fake engine."
OLLAMA_MODEL = "llama3.1:8b"

# Where the flood goes: inside the text of one event, so nothing ends it but the limit.
SSE_TEXT = b'data: {"choices":[{"index":0,"delta":{"content":"'
NDJSON_TEXT = b'{"model":"' + OLLAMA_MODEL.encode() + b'","message":{"role":"assistant","content":"'

ENGINES = {
    "llama-server": (lambda: FakeLlamaServer(n_ctx=4096), "llamacpp", "fake", SSE_TEXT),
    "ollama": (
        lambda: FakeOllama([OllamaModel(OLLAMA_MODEL, context_length=8192)]),
        "ollama",
        OLLAMA_MODEL,
        NDJSON_TEXT,
    ),
}
NAMES = {"llama-server": "llama-server", "ollama": "Ollama"}


def _peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/PID/status")


def _start_measuring(pid: int) -> int:
    """Reset the peak to the present (Linux: clear_refs 5) where allowed; the baseline."""
    with suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    return _peak_kb(pid) if _peak_kb(pid) <= _rss_kb(pid) else _rss_kb(pid)


def _growth_mb(pid: int, baseline_kb: int) -> float:
    return (_peak_kb(pid) - baseline_kb) / 1024


def _start(kind: str, fake: FakeServer, home: Path, *extra: str) -> Headless:
    _, provider, model, _ = ENGINES[kind]
    flags = ["--provider", provider, "--model", model, "--base-url", fake.url, *extra]
    brim = Headless(home, flags)
    brim.ready(timeout=60)
    first = brim.turn("hello", timeout=60)  # everything loaded: the baseline is a working Brim
    assert errors(first) == [] and answered(first) == OK
    return brim


def _measured(kind: str, home: Path, flood: Callable[[Any], None], says: str, what: str) -> None:
    """One hostile answer (`flood` scripts it on the fake) against a working Brim: one
    protocol_error naming the engine that `says` what was too big, the peak memory within
    MAX_GROWTH_MB, and the next line answered."""
    make = ENGINES[kind][0]
    name = NAMES[kind]
    with hostile(make()) as fake:
        brim = _start(kind, fake, home)
        pid = brim.proc.pid
        try:
            baseline = _start_measuring(pid)
            flood(fake)
            events = brim.turn(what, timeout=120)
            grew = _growth_mb(pid, baseline)
            print(f"\n{kind}: peak memory growth on {what}: {grew:.1f} MB")
            assert grew < MAX_GROWTH_MB, f"{what} took {grew:.0f} MB"
            (error,) = errors(events)
            assert error["kind"] == "protocol_error", error
            assert f"{name} at {fake.url} sent {says}" in error["message"]
            after = brim.turn("still there?")
            assert errors(after) == [] and answered(after) == OK
        finally:
            code = brim.close()
    assert code == 0, brim.stderr_tail()
    assert "Traceback" not in brim.stderr, brim.stderr_tail()


@pytest.mark.parametrize("kind", list(ENGINES))
def test_a_400_mb_gzip_line_costs_brim_less_than_100_mb(kind: str, tmp_path: Path):
    text_start = ENGINES[kind][3]
    _measured(
        kind,
        tmp_path / "home",
        lambda fake: fake.script_flood(gzip_flood(text_start), headers=gzip_headers()),
        "a stream line longer than 8 MiB",
        "a 400 MB gzip line",
    )


@pytest.mark.parametrize("kind", list(ENGINES))
def test_an_endless_error_body_costs_brim_less_than_100_mb(kind: str, tmp_path: Path):
    _measured(
        kind,
        tmp_path / "home",
        lambda fake: fake.script_flood(
            endless(b"x" * 65536, prefix=b'{"error": "'),
            status=500,
            content_type="application/json",
        ),
        "an error body (HTTP 500) longer than 1 MiB",
        "an endless error body",
    )


def _sse_words() -> Iterator[bytes]:
    """Text events for ever (every word different, so no repetition guard stops them)."""
    number = 0
    while True:
        batch = []
        for _ in range(50):
            number += 1
            delta = {"choices": [{"index": 0, "delta": {"content": f"word{number} "}}]}
            batch.append(b"data: " + json.dumps(delta).encode() + b"\n\n")
        yield b"".join(batch)


def _ndjson_words() -> Iterator[bytes]:
    number = 0
    while True:
        batch = []
        for _ in range(50):
            number += 1
            part = {
                "model": OLLAMA_MODEL,
                "created_at": "2025-08-01T00:00:00Z",
                "message": {"role": "assistant", "content": f"word{number} "},
                "done": False,
            }
            batch.append(json.dumps(part).encode() + b"\n")
        yield b"".join(batch)


@pytest.mark.parametrize("kind", list(ENGINES))
def test_an_answer_that_ignores_max_tokens_is_stopped_at_the_cap_and_kept(
    kind: str, tmp_path: Path
):
    make, _, _, _ = ENGINES[kind]
    home = tmp_path / "home"
    with hostile(make()) as fake:
        brim = _start(kind, fake, home, "--max-tokens", "64")
        try:
            fake.script_flood(_sse_words() if kind == "llama-server" else _ndjson_words())
            events = brim.turn("write for ever", timeout=60)
            assert errors(events) == []
            (cut,) = [e for e in events if e["type"] == "notice" and e.get("kind") == "answer_cut"]
            assert cut["details"]["limit"] == "ignored"
            assert cut["details"]["max_tokens"] == 64
            assert "ignored max_tokens" in cut["text"]
            text = answered(events)
            assert text.startswith("word1 word2 ") and len(text.split()) >= 64
            assert any(e["type"] == "turn_end" for e in events)
            after = brim.turn("still there?")
            assert errors(after) == [] and answered(after) == OK
        finally:
            assert brim.close() == 0, brim.stderr_tail()
    listed = run_brim(["conversations", "list", "--json"], data_dir=home, timeout=60)
    (conversation,) = json.loads(listed.stdout)
    export = run_brim(
        ["conversations", "export", conversation["id"], "--json"], data_dir=home, timeout=60
    )
    said = [m["content"] for m in json.loads(export.stdout)["messages"] if m["role"] == "assistant"]
    assert text in said  # what came before the stop is kept
