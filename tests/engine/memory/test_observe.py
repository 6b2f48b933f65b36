"""Memory at the request boundary: the standing line, receipts beside each provider call,
exposure only while the exact message is in the request, pruning, epochs, explain."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engine.memory import MemoryObserver, MemoryService, standing_line
from engine.memory.observe import standing_paths
from engine.memory.receipts import MAX_RECEIPTS_PER_ENTRY, PRUNE_EVERY_WRITES, Receipts, Ticket
from engine.messages import Message, ToolCall, system, tool_result, user
from engine.providers.base import ChatOptions, StreamDone
from engine.providers.errors import ProviderError
from engine.providers.registry import make_provider
from tests.engine.memory.helpers import queue_facts
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer

QUOTE = "I always want tabs, never spaces."


def _memory(service: MemoryService) -> MemoryObserver:
    (s,) = queue_facts(service, [QUOTE])
    assert service.accept([s.id])[0].ok
    observer = MemoryObserver(
        service, service.scopes("default", None), conversation=lambda: "conv", writes=True
    )
    observer.begin_run()
    return observer


def _records(service: MemoryService, observer: MemoryObserver) -> list[dict]:
    item = observer.snapshot.get("global/fact-0.md")
    assert item is not None
    return service.receipts.records("global", item.id)


def test_the_standing_line_lists_each_entry_with_the_users_quote(service: MemoryService):
    observer = _memory(service)
    line = standing_line(observer.snapshot)
    assert line.startswith("# Memory")
    assert f'(user: "{QUOTE}")' in line
    assert standing_paths(f"You are Brim.\n\n{line}\n\nWorking directory: /x") == [
        "global/fact-0.md"
    ]


def _send(url: str, observer: MemoryObserver, messages: list[Message]) -> None:
    async def go() -> None:
        provider = observer.wrap(make_provider("llamacpp", url))
        try:
            async for item in provider.stream_chat("fake", messages, ChatOptions(max_tokens=8)):
                if isinstance(item, StreamDone):
                    pass
        finally:
            await provider.aclose()

    asyncio.run(go())


def test_a_request_carrying_the_standing_line_gets_a_receipt_completed_after_the_answer(
    service: MemoryService,
):
    observer = _memory(service)
    messages = [system("Be brief.\n\n" + standing_line(observer.snapshot)), user("Hi")]
    with FakeLlamaServer() as fake:
        fake.script_reply("Hello.")
        _send(fake.url, observer, messages)
    (record,) = _records(service, observer)
    assert record["status"] == "completed" and record["exposure"] == "standing"
    assert record["hash"] == observer.snapshot.entries[0].hash
    assert record["conversation"] == "conv"


def test_a_failed_provider_call_leaves_its_receipt_pending(service: MemoryService):
    observer = _memory(service)
    messages = [system(standing_line(observer.snapshot)), user("Hi")]
    with FakeLlamaServer() as fake:
        fake.script_reply(fail="http500")
        with pytest.raises(ProviderError):
            _send(fake.url, observer, messages)
    (record,) = _records(service, observer)
    assert record["status"] == "pending"


def test_a_request_without_memory_writes_no_receipt(service: MemoryService):
    observer = _memory(service)
    with FakeLlamaServer() as fake:
        _send(fake.url, observer, [system("Be brief."), user("Hi")])
    assert _records(service, observer) == []


def test_a_viewed_entry_is_exposed_only_while_that_exact_tool_message_is_in_the_request(
    service: MemoryService,
):
    observer = _memory(service)
    text = "global/fact-0.md (fact)\n\n" + QUOTE
    observer.register_view(text, ("global/fact-0.md",))
    call = ToolCall("v1", "view_memory", "{}")
    shown = tool_result(call, text)
    assert observer.exposures([user("x"), shown]) == {"global/fact-0.md": "view"}
    cleared = tool_result(call, "[cleared to save context]")
    assert observer.exposures([user("x"), cleared]) == {}
    listing = tool_result(call, "[global] global/ (1 entries)\n  - fact-0 (fact): Fact number 0.")
    assert observer.exposures([listing]) == {}
    other_tool = Message(role="tool", content=text, tool_call_id="r1", name="read_file")
    assert observer.exposures([other_tool]) == {}


def _ticket(observer: MemoryObserver, n: int) -> Ticket:
    item = observer.snapshot.entries[0]
    return Ticket(f"t{n:04d}", item.id, item.canonical, "global", item.epoch, item.hash,
                  "standing", "conv", "req")  # fmt: skip


def test_receipts_are_pruned_to_128_per_entry_every_32_writes(service: MemoryService):
    observer = _memory(service)
    receipts = service.receipts
    item = observer.snapshot.entries[0]
    path = service.layout.receipts_dir / "global" / f"{item.id}.jsonl"
    most = 0
    for n in range(300):
        receipts.write_pending([_ticket(observer, n)])
        lines = path.read_text(encoding="utf-8").splitlines()
        most = max(most, len({json.loads(line)["ticket"] for line in lines}))
    assert most <= MAX_RECEIPTS_PER_ENTRY + PRUNE_EVERY_WRITES
    kept = service.receipts.records("global", item.id)
    assert len(kept) <= MAX_RECEIPTS_PER_ENTRY + PRUNE_EVERY_WRITES
    assert kept[0]["ticket"] == "t0299"  # the newest survive


def test_forgetting_starts_a_new_epoch_and_old_tickets_cannot_write(service: MemoryService):
    observer = _memory(service)
    ticket = _ticket(observer, 1)
    assert service.receipts.write_pending([ticket]) == [ticket]
    before = service.store.epoch("global")
    service.forget("global/fact-0.md")
    assert service.store.epoch("global") != before
    assert not (service.layout.receipts_dir / "global").exists()
    assert service.receipts.complete([ticket]) == 0
    assert service.receipts.write_pending([_ticket(observer, 2)]) == []
    assert not (service.layout.receipts_dir / "global").exists()


def test_an_unreadable_epoch_file_is_moved_aside_and_replaced(service: MemoryService):
    _memory(service)
    service.layout.epochs_path.write_text("\x00not json", encoding="utf-8")
    observer = MemoryObserver(service, service.scopes(None, None), conversation=str, writes=True)
    snapshot = observer.begin_run()
    assert snapshot.entries[0].epoch  # a fresh epoch for the scope
    assert list(service.root.glob(".epochs.json.corrupt-*"))
    json.loads(service.layout.epochs_path.read_text(encoding="utf-8"))


def test_explain_shows_five_recent_records_and_no_memory_text(
    service: MemoryService, tmp_path: Path
):
    observer = _memory(service)
    for n in range(7):
        service.receipts.complete(service.receipts.write_pending([_ticket(observer, n)]))
    info = service.explain("global/fact-0.md")
    assert len(info.records) == 5 and all(r["status"] == "completed" for r in info.records)
    # The CLI over the same root (BRIM's data dir layout: DATA/data/memory).
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    service.root.rename(home / "data" / "memory")
    run = run_brim(["memory", "explain", "global/fact-0.md"], data_dir=home)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("completed") == 5
    assert QUOTE not in run.stdout


def test_many_short_runs_still_keep_receipts_bounded(service: MemoryService):
    """Runs that each write fewer than PRUNE_EVERY_WRITES receipts prune on their first write."""
    observer = _memory(service)
    item = observer.snapshot.entries[0]
    path = service.layout.receipts_dir / "global" / f"{item.id}.jsonl"
    for run in range(40):
        receipts = Receipts(service.layout, service.store)  # a new process's receipts
        for n in range(5):
            receipts.write_pending([_ticket(observer, run * 5 + n)])
    tickets = {json.loads(line)["ticket"] for line in path.read_text().splitlines()}
    assert len(tickets) <= MAX_RECEIPTS_PER_ENTRY + 5
