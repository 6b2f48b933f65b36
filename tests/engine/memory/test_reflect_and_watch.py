"""Reflection's claims and chunks, and the watcher that tells the desktop about changes."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from engine.memory import Completion, MemoryService, MemoryWatcher, Watermarks
from engine.memory.reflect import chunk_tokens, make_chunks, reflect_conversation
from engine.messages import Message, assistant, user
from engine.store import MessageRecord


def _records(texts: list[str]) -> list[MessageRecord]:
    out: list[MessageRecord] = []
    for text in texts:
        out.append(MessageRecord(len(out) + 1, user(text), None))
        out.append(MessageRecord(len(out) + 1, assistant("Noted."), None))
    return out


def count(text: str) -> int:
    return len(text.split())


def test_a_claim_takes_only_rows_after_the_watermark_and_not_re_stored_ones(
    service: MemoryService,
):
    marks = Watermarks(service.layout)
    records = _records(["one two three", "four five six"])
    first = marks.claim("c", records)
    assert (first.previous, first.through, len(first.messages)) == (0, 4, 4)
    # Compaction re-stores kept messages under new row numbers: they are not new.
    restored = [*records, MessageRecord(5, records[2].message, None)]
    with pytest.raises(Exception, match="nothing new"):
        marks.claim("c", restored)
    fresh = [*restored, MessageRecord(6, user("seven eight nine"), None)]
    second = marks.claim("c", fresh)
    assert [m.content for m in second.messages] == ["seven eight nine"]
    assert len(second.earlier) == 4


def test_a_released_claim_can_be_taken_again_but_not_after_a_later_claim(
    service: MemoryService,
):
    marks = Watermarks(service.layout)
    records = _records(["one two three"])
    claim = marks.claim("c", records)
    assert marks.release(claim) and marks.get("c") == 0
    again = marks.claim("c", records)
    later = marks.claim("c", [*records, MessageRecord(3, user("more words here"), None)])
    assert not marks.release(again)  # a later claim moved the watermark since
    assert marks.get("c") == later.through


def test_reflection_reads_the_newest_chunk_in_one_request_and_logs_the_skipped_ones(
    service: MemoryService, caplog: pytest.LogCaptureFixture
):
    texts = [f"Message {i}: " + "word " * 60 for i in range(30)]
    seen: list[str] = []

    async def complete(
        messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        seen.append(messages[1].content)
        return Completion('{"memories": []}')

    with caplog.at_level(logging.WARNING):
        report = asyncio.run(
            reflect_conversation(
                _records(texts),
                "c",
                service=service,
                scopes=service.scopes(None, None),
                complete=complete,
                count_text=count,
                window=1600,
            )
        )
    chunks = make_chunks([r.message for r in _records(texts)], count, chunk_tokens(1600))
    assert report.skipped_chunks == len(chunks) - 1 > 0
    assert "skipped" in caplog.text
    assert len(seen) == 1 and report.requests == 1
    scanned = "\n".join(re.findall(r"<<<SCAN\n(.*?)\nSCAN>>>", "\n".join(seen), re.S))
    assert "Message 29:" in scanned and "Message 0:" not in scanned
    assert report.claimed == 60


def test_the_watcher_reports_an_edit_by_another_process(service: MemoryService):
    folder = service.layout.global_scope().folder
    folder.mkdir(parents=True)
    changed: list[list[str]] = []
    got = threading.Event()

    def on_change(paths: list[str]) -> None:
        changed.append(paths)
        got.set()

    with MemoryWatcher(service.root, on_change, debounce_s=0.1):
        (folder / "editor.md").write_text("Helix.\n", encoding="utf-8")
        assert got.wait(10)
    assert any("global/editor.md" in paths for paths in changed)


def test_the_watcher_ignores_lock_files(service: MemoryService, tmp_path: Path):
    service.root.mkdir(parents=True)
    changed: list[list[str]] = []
    with MemoryWatcher(service.root, changed.append, debounce_s=0.05):
        (service.root / ".memory.lock").write_text("", encoding="utf-8")
        threading.Event().wait(0.5)
    assert changed == []


def test_the_watcher_keeps_working_while_nested_folders_appear_in_bursts(
    service: MemoryService,
):
    """A new agent's folder is made with its parents in one go; the observer adds watches for
    the new tree while inotify also reports each inner folder, which watchdog answers with a
    RuntimeWarning. That must neither stop the observer nor reach the user's terminal."""
    service.root.mkdir(parents=True)
    seen: set[str] = set()
    lock = threading.Lock()
    wanted = {f"agents/a{i}/notes/n{i}/fact.md" for i in range(40)} | {"global/late.md"}
    done = threading.Event()

    def on_change(paths: list[str]) -> None:
        with lock:
            seen.update(paths)
            if wanted <= seen:
                done.set()

    with MemoryWatcher(service.root, on_change, debounce_s=0.05):
        for i in range(40):
            folder = service.root / "agents" / f"a{i}" / "notes" / f"n{i}"
            folder.mkdir(parents=True)
            (folder / "fact.md").write_text("x\n", encoding="utf-8")
        threading.Event().wait(0.3)
        (service.root / "global").mkdir()
        (service.root / "global" / "late.md").write_text("y\n", encoding="utf-8")
        assert done.wait(10), sorted(wanted - seen)[:5]
