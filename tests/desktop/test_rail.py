"""The context rail and its timeline, driven by real sessions against a fake llama-server."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.format import format_tokens
from desktop.widgets.context_rail import ContextRail
from engine.context.budget import ContextBudget
from engine.events import ContextEvent, Event
from engine.report.context_report import CacheShare, RequestTracker, build_context_report
from tests.desktop.conftest import agent_toml
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, FakeToolCall, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)


def _send(qtbot: Any, window: Any, text: str) -> None:
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def _summaries_or(text: str):  # type: ignore[no-untyped-def]
    def respond(request: Any) -> Reply:
        return Reply(text=SUMMARY if is_compaction(request.body) else text)

    return respond


def test_the_rails_numbers_equal_the_engines_context_events(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.responder = _summaries_or("A short answer.")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        contexts: list[ContextEvent] = []

        def keep(event: Event) -> None:
            if isinstance(event, ContextEvent):
                contexts.append(event)

        d.app.bridge.event.connect(keep)
        for text in ("First question", "Second question"):
            _send(qtbot, d.window, text)
            qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        qtbot.waitUntil(lambda: len(contexts) == 2)
        report = d.window.rail.report()
        last = contexts[-1]
        # At rest the rail describes the next request: the last one plus its answer, counted
        # by llama-server itself, so it is not marked as an estimate.
        assert report.window == last.window and report.describes == "next request"
        assert report.used > last.used and not report.estimated
        assert d.window.rail.headline_label.text() == (
            f"{100 * report.used / last.window:.0f}% full · {format_tokens(report.used)} of 4K"
            " · next request"
        )
        assert [p.used for p in report.timeline] == [c.used for c in contexts]
        assert d.window.rail.timeline.points() == [
            pytest.approx(c.percent, abs=0.05) for c in contexts
        ]
        assert f"{report.headroom:,} tokens available before auto-compact" in d.window.rail.text()
        assert "ctx " in d.window.header.text()
        # The llama-server reuses its cache: the rail says how much, from the engine's figures.
        assert "Prompt cache (session): " in d.window.rail.text()


def test_after_a_turn_the_rail_and_the_context_snapshot_show_the_same_breakdown(
    qtbot, real_desktop
):
    """Both views describe the next request: the answer just received is in both."""
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.responder = _summaries_or("An answer of a few words, long enough to count.")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        snapshots: list[Any] = []
        d.app.bridge.event.connect(
            lambda e: snapshots.append(e.report) if getattr(e, "snapshot", False) else None
        )
        for text in ("First question", "Second question"):
            _send(qtbot, d.window, text)
            qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        _send(qtbot, d.window, "/context")
        qtbot.waitUntil(lambda: len(snapshots) == 1)
        assert d.window.rail.report().categories == snapshots[0].categories


def test_a_compaction_shows_its_notice_row_and_a_timeline_marker(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _summaries_or("ok")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        states: list[str] = []
        d.app.bridge.event.connect(lambda e: states.append(getattr(e, "state", "")))
        for i in range(20):
            _send(qtbot, d.window, f"Message {i}: " + "words " * 100)
            qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
            if "compaction" in d.window.rail.timeline.marker_kinds():
                break
        rows = [r for r in d.window.transcript.rows() if r.kind == "notice"]
        compaction = [r for r in rows if r.marker == "compaction"]
        assert compaction, [r.text for r in rows]
        assert compaction[0].text.startswith("auto-compacted ")
        assert "into a summary: the prompt neared the context window" in compaction[0].text
        assert "compaction" in d.window.rail.timeline.marker_kinds()
        assert "compacting" in states
        assert "auto-compacted" in d.window.transcript.toPlainText()
        # The ladder's passing lines are for headless output; the window has its row.
        assert "auto-compacting…" not in d.window.transcript.toPlainText()
        assert not any(r.text.startswith("Compacted ") for r in rows)


def test_notices_stay_in_the_saved_conversation_when_it_is_opened_again(
    qtbot, real_desktop, tmp_path
):
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = _summaries_or("ok")
        agents = {"chat.toml": agent_toml("chat", fake.url)}
        d = real_desktop(agents=agents)
        for i in range(20):
            _send(qtbot, d.window, f"Message {i}: " + "words " * 100)
            qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
            if "compaction" in d.window.rail.timeline.marker_kinds():
                break
        before = [(r.kind, r.text) for r in d.window.transcript.rows() if r.kind == "notice"]
        d.app.navigator.save_window()
        d.app.shutdown()
        again = real_desktop(home=tmp_path / "home")
        after = [(r.kind, r.text) for r in again.window.transcript.rows() if r.kind == "notice"]
    assert any(text.startswith("auto-compacted") for _, text in after)
    assert [t for _, t in before if "70% mark" in t] == [t for _, t in after if "70% mark" in t]
    assert "Message 0:" in again.window.transcript.toPlainText()  # summarized, still shown


def test_a_reported_zero_cache_is_drawn_in_the_alarm_colour_and_silence_is_not(qtbot):
    rail = ContextRail()
    qtbot.addWidget(rail)
    tracker = RequestTracker()
    tracker.on_usage(900, 0)
    tracker.on_context(900, 8192, estimated=False)
    report = build_context_report(
        budget=ContextBudget(8192), source="server", estimate=900, tracker=tracker
    )
    rail.set_report(report)  # a first request: nothing could have been cached yet
    shown = [label for label in rail.cache_labels if not label.isHidden()]
    assert {label.objectName() for label in shown} == {"railMuted"}
    assert "first request: nothing to reuse yet" in shown[1].text()

    tracker.on_usage(900, 0)
    tracker.on_context(900, 8192, estimated=False)
    report = build_context_report(
        budget=ContextBudget(8192), source="server", estimate=900, tracker=tracker
    )
    assert report.cache_session == CacheShare(0, 1800, True)
    rail.set_report(report)
    shown = [label for label in rail.cache_labels if not label.isHidden()]
    assert [label.text() for label in shown] == [
        "Prompt cache (session): 0 read (0% of prompt)",
        "Prompt cache (last request): 0 read (0% of prompt)",
    ]
    assert {label.objectName() for label in shown} == {"cacheAlarm"}

    silent = RequestTracker()
    silent.on_usage(900, None)
    silent.on_context(900, 8192, estimated=False)
    rail.set_report(
        build_context_report(
            budget=ContextBudget(8192), source="server", estimate=900, tracker=silent
        )
    )
    shown = [label for label in rail.cache_labels if not label.isHidden()]
    assert [label.text() for label in shown] == ["Prompt cache: not reported"]
    assert shown[0].objectName() == "railMuted"


def test_the_header_and_rail_update_as_each_request_lands_not_only_at_turn_end(
    qtbot, real_desktop, tmp_path
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("alpha beta gamma " * 200, encoding="utf-8")
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "notes.md"})])
        fake.script_reply("It is a list of Greek letters. " * 20, token_delay=0.05)
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)}, workspace=ws)
        contexts: list[ContextEvent] = []
        seen: list[tuple[str, bool, str]] = []  # what the header said as each request landed

        def keep(e: Event) -> None:
            if isinstance(e, ContextEvent):
                contexts.append(e)
                seen.append(
                    (
                        d.window.header.text(),
                        d.app.bridge.busy,
                        d.window.transcript.toPlainText(),
                    )
                )

        d.app.bridge.event.connect(keep)
        _send(qtbot, d.window, "What is in notes.md?")
        qtbot.waitUntil(lambda: len(contexts) == 1, timeout=10000)
        first = contexts[0]
        header, busy, transcript = seen[0]
        # The first request landed; the turn is still running its second one.
        assert busy
        assert f"ctx {format_tokens(first.used)}/8K" in header and "last request" in header
        assert "Worked for" not in transcript
        # The header counts the run's requests: the read was step 1, the answer is step 2.
        qtbot.waitUntil(lambda: "turn 1 · step 2" in d.window.header.text(), timeout=10000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=20000)
        qtbot.waitUntil(lambda: d.window.header.state() == "ready")
        assert "step" not in d.window.header.text()
        assert len(contexts) == 2 and contexts[1].used > first.used
        assert d.window.rail.report().describes == "next request"
        assert d.window.rail.report().used > contexts[1].used


def test_a_capped_run_shows_its_step_against_the_iteration_cap_while_it_works(
    qtbot, real_desktop, tmp_path
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text("alpha\n", encoding="utf-8")
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "a.md"})])
        fake.script_reply(tool_calls=[FakeToolCall("read_file", {"path": "a.md"})])
        fake.script_reply("Done reading. " * 30, token_delay=0.05)
        d = real_desktop(
            agents={"chat.toml": agent_toml("chat", fake.url, max_iterations=10)}, workspace=ws
        )
        _send(qtbot, d.window, "Read a.md twice")
        qtbot.waitUntil(lambda: "turn 1 · step 3/10" in d.window.header.text(), timeout=10000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=20000)
        qtbot.waitUntil(lambda: d.window.header.state() == "ready")
        assert d.window.header.turn_label.text() == "turn 1"
