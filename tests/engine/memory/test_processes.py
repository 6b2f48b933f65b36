"""Real processes against one memory root: racing decisions, racing reflections, and kills."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.memory import MemoryService
from engine.messages import assistant, user
from engine.paths import BrimPaths
from engine.store import Store
from tests.engine.memory.fakes import FakeModel, Save, saving
from tests.engine.memory.helpers import queue_facts, sentences
from tests.helpers.fake_engines import FakeLlamaServer

ROOT = Path(__file__).resolve().parents[3]


def _driver(root: Path, action: str, go: Path, ready: Path, ids: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engine.memory.driver", str(root), action, str(go),
         str(ready), *ids],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _wait_for(paths: list[Path], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, "a child process did not start"
        time.sleep(0.01)


def test_two_processes_accepting_and_rejecting_one_queue_never_both_win(
    service: MemoryService, tmp_path: Path
):
    ids = [s.id for s in queue_facts(service, sentences(24))]
    go = tmp_path / "go"
    ready = [tmp_path / "ready-a", tmp_path / "ready-b"]
    accepter = _driver(service.root, "accept", go, ready[0], ids)
    rejecter = _driver(service.root, "reject", go, ready[1], list(reversed(ids)))
    _wait_for(ready)
    go.write_text("go", encoding="utf-8")
    out_a, err_a = accepter.communicate(timeout=60)
    out_b, err_b = rejecter.communicate(timeout=60)
    assert accepter.returncode == 0 and rejecter.returncode == 0, err_a + err_b
    accepted = {r["id"] for r in map(json.loads, out_a.splitlines()) if r["ok"]}
    rejected = {r["id"] for r in map(json.loads, out_b.splitlines()) if r["ok"]}
    assert accepted.isdisjoint(rejected)  # never both won
    assert accepted | rejected == set(ids)  # and every one was decided once
    data = json.loads(service.layout.queue_path.read_text(encoding="utf-8"))
    assert data["suggestions"] == []
    written = {e.fields.suggestion for e in service.store.read_scope(service.layout.global_scope())}
    assert written == accepted


def _kill_after(child: subprocess.Popen, decisions: int, rng: random.Random) -> bool:
    """SIGKILL `child` at a random moment of its accept after `decisions` (the one after it
    under way): the wait is a random share of how long the last decision took, so it lands
    inside a decision on any machine. False when the child finished first."""
    assert child.stdout is not None
    last = time.monotonic()
    step = 0.0
    for _ in range(decisions):
        if not child.stdout.readline():
            return False
        now = time.monotonic()
        step, last = now - last, now
    time.sleep(rng.uniform(0.0, step))
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    return child.returncode == -signal.SIGKILL


def test_a_process_killed_during_accept_leaves_each_entry_written_and_dequeued_or_neither(
    tmp_path: Path,
):
    """Kills by progress, not by a clock: a kill after a random sleep on a fast machine came
    after the last accept, on a slow one before the first, and the test then checked a queue
    nobody had interrupted. It goes on until a kill has landed in the window that matters,
    after an entry was written and before it left the queue."""
    rng = random.Random(4)
    mid_accept = killed = rounds = 0
    while rounds < 12 or (mid_accept == 0 and rounds < 40):
        service = MemoryService(tmp_path / f"m{rounds}")
        items = queue_facts(service, sentences(20))
        go, ready = tmp_path / f"go{rounds}", tmp_path / f"ready{rounds}"
        child = _driver(service.root, "accept", go, ready, [s.id for s in items])
        _wait_for([ready])
        go.write_text("go", encoding="utf-8")
        killed += _kill_after(child, rng.randint(1, 18), rng)
        pending = {s.id for s in service.pending()}
        written = {
            e.fields.suggestion: e for e in service.store.read_scope(service.layout.global_scope())
        }
        for s in items:
            assert (s.id in written) != (s.id in pending), f"round {rounds}: {s.id}"
        queued = json.loads(service.layout.queue_path.read_text(encoding="utf-8"))
        if service.layout.intent_path.exists():
            intent = json.loads(service.layout.intent_path.read_text(encoding="utf-8"))
            queued_ids = {q["id"] for q in queued["suggestions"]}
            mid_accept += intent["id"] in written and intent["id"] in queued_ids
        # Whoever takes the lock next tidies up; the files then agree with what was seen.
        service.reject([])
        raw = json.loads(service.layout.queue_path.read_text(encoding="utf-8"))
        assert {s["id"] for s in raw["suggestions"]} == pending, f"round {rounds}"
        assert not service.layout.intent_path.exists()
        rounds += 1
    # The premise: the children were killed part-way, and one at least between writing an
    # entry and taking it off the queue.
    assert killed >= rounds - 2, (killed, rounds)
    assert mid_accept >= 1, (mid_accept, rounds)


def _saved_conversation(home: Path, turns: list[str]) -> str:
    store = Store.open(BrimPaths.under(home).ensure().db_path)
    try:
        conv = store.create_conversation("chat")
        for text in turns:
            store.append_message(conv, user(text))
            store.append_message(conv, assistant("Noted."))
        return conv
    finally:
        store.close()


def _reflect(home: Path, url: str, conversation: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "--data-dir", str(home), "memory", "reflect",
         "--conversation", conversation, "--provider", "llamacpp", "--base-url", url,
         "--model", "fake", "--json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def test_reflections_started_together_never_cover_the_same_messages(tmp_path: Path):
    prefs = [f"I always want reports in format number {i}." for i in range(6)]
    home = tmp_path / "home"
    conversation = _saved_conversation(home, prefs)
    model = FakeModel(extract=saving(*(Save(p, f"format-{i}", p) for i, p in enumerate(prefs))))
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        children = [_reflect(home, fake.url, conversation) for _ in range(3)]
        results = [c.communicate(timeout=120) for c in children]
    reports = []
    for child, (out, err) in zip(children, results, strict=True):
        assert child.returncode == 0, err
        reports.append(json.loads(out))
    claims = [r for r in reports if not r["nothing_new"]]
    assert len(claims) == 1
    assert claims[0]["claimed"] == 12 and claims[0]["previous"] == 0
    # One pass scanned the conversation once: each preference was queued exactly once.
    service = MemoryService(BrimPaths.under(home).memory_dir)
    assert sorted(s.quote for s in service.pending()) == sorted(prefs)
    scans = [
        b["messages"][1]["content"] for b in model.seen["extractor"] if len(b["messages"]) == 2
    ]
    assert sum(text.count(prefs[0]) for text in scans) == 1


def test_a_later_reflection_claims_only_what_was_said_since(tmp_path: Path):
    home = tmp_path / "home"
    first = ["I always want reports in format one."]
    conversation = _saved_conversation(home, first)
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = FakeModel()
        one = json.loads(_reflect(home, fake.url, conversation).communicate(timeout=120)[0])
        store = Store.open(BrimPaths.under(home).db_path)
        store.append_message(conversation, user("And I always want tables in Markdown."))
        store.close()
        two = json.loads(_reflect(home, fake.url, conversation).communicate(timeout=120)[0])
        three = json.loads(_reflect(home, fake.url, conversation).communicate(timeout=120)[0])
    assert (one["previous"], one["claimed"]) == (0, 2)
    assert two["previous"] == one["through"] and two["claimed"] == 1
    assert three["nothing_new"] is True


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_ino)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_the_queue_and_watermark_files_parse_after_each_kill(tmp_path: Path):
    """A reflection killed right as it writes its memory files leaves JSON files that still
    parse, and the next reflection runs to the end."""
    home = tmp_path / "home"
    root = BrimPaths.under(home).memory_dir
    files = [root / ".reflected-conversations.json", root / ".pending-memory.json"]
    kills = 0
    with FakeLlamaServer(n_ctx=8192, token_delay=0.002) as fake:
        for round_, delay in enumerate((0.0, 0.0, 0.01, 0.05)):
            quote = f"I always want option {round_} on."
            conversation = _saved_conversation(home, [quote])
            fake.responder = FakeModel(extract=saving(Save(quote, f"opt-{round_}", quote)))
            before = [_stamp(f) for f in files]
            child = _reflect(home, fake.url, conversation)
            deadline = time.monotonic() + 60
            # Kill it as soon as it has (started to) write one of the files.
            while [_stamp(f) for f in files] == before and child.poll() is None:
                assert time.monotonic() < deadline, "the reflection wrote nothing"
                time.sleep(0.001)
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=30)
            kills += child.returncode == -signal.SIGKILL
            assert files[0].exists(), f"round {round_}: the claim was not written"
            for path in files:
                if path.exists():
                    json.loads(path.read_text(encoding="utf-8"))
        assert kills >= 2  # the premise: the rounds were killed, not finished first
        last = "I always want tables in Markdown."
        conversation = _saved_conversation(home, [last])
        fake.responder = FakeModel(extract=saving(Save(last, "tables", last)))
        out, err = _reflect(home, fake.url, conversation).communicate(timeout=120)
    report = json.loads(out)
    assert report["nothing_new"] is False, err
    for path in files:
        json.loads(path.read_text(encoding="utf-8"))
    assert last in {s.quote for s in MemoryService(root).pending()}


def test_one_reflection_covers_several_conversations_with_one_engine(tmp_path: Path):
    home = tmp_path / "home"
    first = _saved_conversation(home, ["I always want reports in format number 1."])
    second = _saved_conversation(home, ["I always want reports in format number 2."])
    prefs = [f"I always want reports in format number {i}." for i in (1, 2)]
    model = FakeModel(extract=saving(*(Save(p, f"format-{i}", p) for i, p in enumerate(prefs))))
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        child = subprocess.run(
            [sys.executable, "-m", "engine.cli", "--data-dir", str(home), "memory", "reflect",
             "--conversation", first, "--conversation", second, "--provider", "llamacpp",
             "--base-url", fake.url, "--model", "fake", "--json"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        probes = len(fake.requests_to("/props"))
    assert child.returncode == 0, child.stderr
    reports = [json.loads(line) for line in child.stdout.splitlines()]
    assert [r["nothing_new"] for r in reports] == [False, False]
    assert probes == 1  # one engine, asked once, for both
    service = MemoryService(BrimPaths.under(home).memory_dir)
    assert sorted(s.quote for s in service.pending()) == prefs
    marks = json.loads(service.layout.watermark_path.read_text(encoding="utf-8"))
    assert {first, second} <= set(marks["conversations"])
