"""The review queue: only accept writes; an entry that changed since fails and stays."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.memory import MemoryService, SourceSet
from engine.memory.errors import EntryConflict
from engine.memory.queue import Suggestion
from engine.memory.tools import MemoryToolState, plan_fact, queue_fact
from engine.messages import user
from tests.engine.memory.helpers import queue_facts, queue_lesson_for, sentences


def test_queued_facts_change_nothing_in_memory_until_accepted(service: MemoryService):
    (s,) = queue_facts(service, ["I always want tabs, never spaces."])
    assert [p.id for p in service.pending()] == [s.id]
    assert not service.layout.global_scope().folder.exists()
    (decision,) = service.accept([s.id])
    assert decision.ok and decision.path == "global/fact-0.md"
    entry = service.store.get(service.layout.global_scope(), "fact-0")
    assert entry is not None
    assert entry.fields.origin == "auto" and entry.fields.keys == s.keys
    assert entry.fields.quotes == ("I always want tabs, never spaces.",)
    assert entry.fields.suggestion == s.id
    assert service.pending() == []


def test_reject_drops_a_suggestion_and_a_second_decision_finds_nothing(service: MemoryService):
    (s,) = queue_facts(service, ["I always want tabs, never spaces."])
    assert service.reject([s.id])[0].ok
    assert not service.accept([s.id])[0].ok
    assert not service.layout.global_scope().folder.exists()


def test_the_same_claim_is_not_queued_twice(service: MemoryService):
    msg = user("I always want tabs, never spaces.")
    sources = SourceSet("c", [msg])
    state = MemoryToolState(service, service.scopes(None, None), lambda: sources, "queue")
    args = dict(action="create", scope="global", content="Tabs, never spaces.", source=None)
    queue_fact(state, plan_fact(state, subject="a", quote=msg.content, require_view=False, **args))
    with pytest.raises(EntryConflict, match="already waiting"):
        queue_fact(
            state, plan_fact(state, subject="b", quote=msg.content, require_view=False, **args)
        )
    assert service.pending_count() == 1


def _amendment(service: MemoryService) -> Suggestion:
    (s,) = queue_facts(service, ["I always want tabs, never spaces."])
    service.accept([s.id])
    msg = user("Actually I want four spaces from now on.")
    sources = SourceSet("conv-2", [msg])
    state = MemoryToolState(service, service.scopes(None, None), lambda: sources, "queue")
    plan = plan_fact(
        state,
        action="amend",
        scope="global",
        subject="fact-0",
        content="The user wants four spaces.",
        quote=msg.content,
        source=None,
        require_view=False,
    )
    return queue_fact(state, plan)


def test_an_amendment_replaces_exactly_what_it_was_suggested_against(service: MemoryService):
    amend = _amendment(service)
    (decision,) = service.accept([amend.id])
    assert decision.ok
    entry = service.store.get(service.layout.global_scope(), "fact-0")
    assert entry is not None and entry.first_line == "The user wants four spaces."


def test_an_amendment_whose_entry_changed_fails_and_stays_queued(service: MemoryService):
    amend = _amendment(service)
    path = service.layout.global_scope().folder / "fact-0.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nEdited by hand.\n", encoding="utf-8")
    (decision,) = service.accept([amend.id])
    assert not decision.ok and "changed since" in decision.message
    assert [s.id for s in service.pending()] == [amend.id]
    assert "Edited by hand." in path.read_text(encoding="utf-8")


def test_a_fact_forgotten_after_it_was_suggested_cannot_be_accepted(service: MemoryService):
    first, second = queue_facts(service, sentences(2))
    service.accept([first.id])
    # The person forgets the first entry; the same claim suggested again is refused.
    service.forget("global/fact-0.md")
    again = Suggestion(**{**first.to_dict(), "id": "s-again", "keys": first.keys})
    items = json.loads(service.layout.queue_path.read_text(encoding="utf-8"))
    items["suggestions"].append(again.to_dict())
    service.layout.queue_path.write_text(json.dumps(items), encoding="utf-8")
    (decision,) = service.accept(["s-again"])
    assert not decision.ok and "forgot" in decision.message
    assert service.accept([second.id])[0].ok


def test_lessons_are_written_as_the_agents_accepted_proposals(service: MemoryService):
    s = queue_lesson_for(service, "testing", "Run the tests before saying a change works.")
    assert service.accept([s.id])[0].ok
    entry = service.store.get(service.layout.agent_scope("default"), "testing")
    assert entry is not None and entry.kind == "lesson" and entry.fields.origin == "agent"


def test_a_corrupt_queue_is_moved_aside_not_lost(service: MemoryService):
    service.root.mkdir(parents=True)
    service.layout.queue_path.write_text("{not json", encoding="utf-8")
    assert service.pending() == []
    aside = list(service.root.glob(".pending-memory.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text(encoding="utf-8") == "{not json"


def _crash_during_accept(root: Path, suggestion: str, crash_on: str) -> int:
    """Accept in a child process that dies (os._exit, no cleanup) on its first atomic write
    of a file whose name contains `crash_on`."""
    code = textwrap.dedent(
        f"""
        import os, sys
        import engine.memory.jsonfile as jf
        import engine.memory.store as st
        from engine.memory import MemoryService
        def dying(real):
            def write(path, text, *a, **k):
                if {crash_on!r} in str(path):
                    os._exit(9)
                return real(path, text, *a, **k)
            return write
        jf.atomic_write_text = dying(jf.atomic_write_text)
        st.atomic_write_text = dying(st.atomic_write_text)
        MemoryService({str(root)!r}).accept([{suggestion!r}])
        """
    )
    return subprocess.run([sys.executable, "-c", code], cwd=Path.cwd(), timeout=60).returncode


def test_a_crash_before_the_entry_is_written_leaves_it_queued_and_unwritten(
    service: MemoryService,
):
    (s,) = queue_facts(service, ["I always want tabs, never spaces."])
    assert _crash_during_accept(service.root, s.id, "fact-0.md") == 9
    assert [p.id for p in service.pending()] == [s.id]
    assert service.store.get(service.layout.global_scope(), "fact-0") is None
    assert service.accept([s.id])[0].ok  # and a later accept still works


def test_a_crash_after_the_entry_is_written_leaves_it_written_and_dequeued(
    service: MemoryService,
):
    (s,) = queue_facts(service, ["I always want tabs, never spaces."])
    assert _crash_during_accept(service.root, s.id, ".pending-memory.json") == 9
    assert service.store.get(service.layout.global_scope(), "fact-0") is not None
    assert service.pending() == []  # already, before anyone tidies up
    service.reject([])  # the next lock holder finishes the accept
    assert not service.layout.intent_path.exists()
    data = json.loads(service.layout.queue_path.read_text(encoding="utf-8"))
    assert data["suggestions"] == []
