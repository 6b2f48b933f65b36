"""The gauge is always right (issue 11 item 5): the header and the rail, in the real window
on real sessions against a fake llama-server, compared with what the engine evaluated.

The sessions count exactly here (tests/helpers/exact_counter.py stands in for llama-server's
/tokenize, which the loop uses where the engine offers it), so "the next request costs N"
can be checked to the token: the gauge read at rest, plus the message then typed, is the
`prompt_tokens` the engine reports for the request that follows.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop.format import format_tokens
from engine.context.model_face import OPENING, OPENING_AFTER
from engine.events import ContextReportEvent, Event
from tests.desktop.conftest import agent_toml, chat_and_wait
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.exact_counter import exact_counter_for
from tests.helpers.fake_engines import FakeLlamaServer, Reply
from tests.helpers.smollm2_vocab import render_message, tokenize

SUMMARY = (
    "## Goal\nReply to each message.\n## Constraints & Preferences\n- (none)\n"
    "## Covered So Far\n- (none)\n## Progress\n### Done\n- answered\n### In Progress\n"
    "- (none)\n### Blocked\n- (none)\n## Key Decisions\n- (none)\n## Next Steps\n- (none)\n"
    "## Critical Context\n- (none)\n"
)


@pytest.fixture(autouse=True)
def exact_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.session.chat.counter_for", exact_counter_for)


def _user_line(text: str) -> int:
    """What one more user message adds to the request, by the engine's own template."""
    return len(tokenize(render_message({"role": "user", "content": text})))


def _at_rest(d: Any) -> int:
    """The gauge once the agent is ready: the rail's figure, which the header shows too."""
    report = d.window.rail.report()
    assert report is not None and report.describes == "next request"
    assert not report.streaming
    assert f"ctx {format_tokens(report.used)}/" in d.window.header.text()
    assert "next request" in d.window.header.text()
    return report.used


def _next_request_costs(qtbot: Any, d: Any, fake: FakeLlamaServer, text: str) -> int:
    """Send `text`; what the engine evaluated for its request, less the message itself."""
    before = len(fake.chat_requests)
    chat_and_wait(qtbot, d, text)
    return fake.chat_requests[before].prompt_tokens - _user_line(text)


def test_while_a_2000_token_answer_streams_the_rails_fill_rises(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(" ".join(f"w{i}" for i in range(2000)), token_delay=0.002)
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        seen: list[tuple[int, bool]] = []

        def sample(event: Event) -> None:  # after the window drew the same event
            if isinstance(event, ContextReportEvent) and not event.snapshot:
                report = d.window.rail.report()
                if report is not None:
                    seen.append((report.used, report.streaming))

        d.app.bridge.event.connect(sample)
        d.window.composer.setPlainText("Write a long answer")
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=60000)
        prompt = fake.chat_requests[0].prompt_tokens
    streamed = [used for used, streaming in seen if streaming]
    assert len(streamed) >= 5, seen
    assert streamed == sorted(streamed) and streamed[-1] > streamed[0]
    assert streamed[-1] >= prompt + 1500  # most of the answer was counted as it came
    assert "next request" in d.window.rail.headline_label.text()


def test_after_esc_the_gauge_is_what_the_next_request_costs(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.script_reply(" ".join(f"w{i}" for i in range(3000)), token_delay=0.01)
        fake.responder = lambda request: Reply(text="Short.")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        d.window.composer.setPlainText("Tell me everything")
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: d.window.transcript.streaming, timeout=10000)
        qtbot.waitUntil(lambda: (d.window.rail.report().used or 0) > 200, timeout=10000)
        qtbot.keyClick(d.window.composer, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=10000)
        qtbot.waitUntil(lambda: d.window.header.state() == "ready")
        shown = _at_rest(d)
        assert shown > fake.chat_requests[0].prompt_tokens  # the partial answer is counted
        assert _next_request_costs(qtbot, d, fake, "go on") == shown


def test_after_a_restart_the_gauge_shows_the_same_numbers_as_before_and_they_are_right(
    qtbot, real_desktop, tmp_path
):
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = lambda request: Reply(text="An answer of several words. " * 12)
        agents = {"chat.toml": agent_toml("chat", fake.url)}
        d = real_desktop(agents=agents)
        for text in ("First question", "Second question"):
            chat_and_wait(qtbot, d, text)
        qtbot.waitUntil(lambda: d.window.header.state() == "ready")
        before = _at_rest(d)
        header_before = d.window.header.context_label.toolTip()
        d.app.navigator.save_window()
        d.app.shutdown()
        again = real_desktop(home=tmp_path / "home")
        qtbot.waitUntil(lambda: again.window.rail.report() is not None, timeout=10000)
        after = _at_rest(again)
        assert after == before
        assert (
            again.window.header.context_label.toolTip().split("\n")[0]
            == (header_before.split("\n")[0])
        )
        assert _next_request_costs(qtbot, again, fake, "Third question") == after


def test_an_empty_conversation_shows_what_its_first_request_costs(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.responder = lambda request: Reply(text="Fine. " * 300)
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        for i in range(3):
            chat_and_wait(qtbot, d, f"Question {i}")
        chat_and_wait(qtbot, d, "/new")
        qtbot.waitUntil(lambda: d.window.rail.report() is not None, timeout=10000)
        qtbot.waitUntil(lambda: d.window.rail.report().requests == 0, timeout=10000)
        empty = _at_rest(d)
        assert empty < 1000  # the system prompt alone, not the conversation left
        assert _next_request_costs(qtbot, d, fake, "Hello") == empty


def test_a_failed_start_leaves_no_numbers_of_the_conversation_before(qtbot, real_desktop):
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.responder = lambda request: Reply(text="Fine. " * 300)
        agents = {
            "chat.toml": agent_toml("chat", fake.url),
            "down.toml": agent_toml("down", "http://127.0.0.1:9"),
        }
        d = real_desktop(agents=agents)
        chat_and_wait(qtbot, d, "Question")
        assert "ctx " in d.window.header.text()
        d.app.navigator.open("down", None)
        qtbot.waitUntil(lambda: d.window.banner.isVisible(), timeout=15000)
        qtbot.waitUntil(lambda: not d.app.bridge.busy, timeout=15000)
    assert "ctx " not in d.window.header.text()
    assert "% full" not in d.window.rail.text()
    assert d.window.rail.breakdown.rows() == []


OPENINGS = (OPENING, OPENING_AFTER)


def test_a_model_answering_after_a_compaction_is_not_shown_its_checkpoint_as_its_own_words(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = lambda request: Reply(
            text=SUMMARY if is_compaction(request.body) else "ok"
        )
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        for i in range(20):
            chat_and_wait(qtbot, d, f"Message {i}: " + "words " * 100)
            if "compaction" in d.window.rail.timeline.marker_kinds():
                break
        assert "compaction" in d.window.rail.timeline.marker_kinds()
        chat_and_wait(qtbot, d, "hi, are you still there?")
        sent = fake.chat_requests[-1].body["messages"]
    # On llama-server the checkpoint follows the kept messages (so that its chunk reuse
    # keeps them): it is the user's side of the conversation, never the model's own words.
    assert "hi, are you still there?" in sent[-1]["content"] and sent[-1]["role"] == "user"
    assert [m["role"] for m in sent].count("system") == 1 and sent[0]["role"] == "system"
    holding = [m for m in sent if any(o in str(m.get("content")) for o in OPENINGS)]
    assert [m["role"] for m in holding] in (["system"], ["user"])
    assert "Reply to each message." in holding[0]["content"]


def test_a_message_too_large_for_the_window_stays_in_the_composer_and_nothing_is_sent(
    qtbot, real_desktop
):
    with FakeLlamaServer(n_ctx=1024) as fake:
        fake.responder = lambda request: Reply(text="ok")
        d = real_desktop(agents={"chat.toml": agent_toml("chat", fake.url)})
        paste = "paste " * 3000
        chat_and_wait(qtbot, d, paste)
        qtbot.waitUntil(lambda: d.window.banner.isVisible(), timeout=5000)
        requests = len(fake.chat_requests)
    assert requests == 0
    assert d.window.composer.toPlainText() == paste
    assert "1,024-token window" in d.window.banner.text()
    assert not [r for r in d.window.transcript.rows() if r.kind == "user"]
