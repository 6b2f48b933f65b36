"""Headless output carries the rail's report after every request, and answers the slash
commands a front end would otherwise show in a window."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_brim
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeLlamaServer, Reply


def test_headless_chat_reports_the_context_after_each_request_and_answers_slash_commands(
    tmp_path: Path,
):
    with FakeLlamaServer(n_ctx=4096) as fake:
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="Hello there\n/context\n/usage\n/work\n",
        )
        requests = len(fake.chat_requests)
    assert run.returncode == 0, run.stderr
    contexts = run.of_type("context")
    reports = run.of_type("context_report")
    live = [r for r in reports if not r["snapshot"]]
    (snapshot,) = [r for r in reports if r["snapshot"]]
    assert requests == 1 and len(contexts) == 1
    # As the request lands the report is the engine's count of it; once the turn is over it
    # describes the next request, which carries the answer too.
    landed = [r for r in live if r["describes"] == "last request"]
    assert landed and landed[-1]["used"] == contexts[0]["used"]
    assert landed[-1]["estimated"] is False
    assert live[-1]["describes"] == "next request" and live[-1]["used"] > contexts[0]["used"]
    assert (
        snapshot["window"] == 4096
        and snapshot["headroom"] == snapshot["compact_at"] - snapshot["used"]
    )
    assert snapshot["lines"][0].startswith("Context ")
    assert [c["name"] for c in snapshot["categories"]][:2] == ["System prompt", "Tool schemas"]
    (usage,) = run.of_type("usage_report")
    assert usage["total"]["requests"] == 1
    assert usage["lines"][-1].startswith("local engines publish no price")
    (work,) = run.of_type("work_state")
    assert work["text"] == ""


def test_headless_output_carries_the_ladders_compaction_notices_as_it_acts(tmp_path: Path):
    summary = (
        "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
        "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n"
        "## Next Steps\n-\n## Critical Context\n-\n"
    )
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = lambda request: Reply(
            text=summary if is_compaction(request.body) else "ok"
        )
        lines = "".join(f"Message {i}: " + "words " * 100 + "\n" for i in range(24))
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin=lines,
        )
    assert run.returncode == 0, run.stderr
    texts = [n["text"] for n in run.of_type("notice")]
    starting = [t for t in texts if t.endswith("auto-compacting…")]
    assert starting and starting[0].startswith("Context window ~")
    done = [t for t in texts if t.startswith("Compacted ") and "(saved ~" in t]
    assert done, texts
    assert any(t.startswith("auto-compacted ") for t in texts)  # and the saved row


def test_headless_chat_shows_and_restores_a_compaction_and_conversations_lists_it(
    tmp_path: Path,
):
    summary = (
        "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
        "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n"
        "## Next Steps\n-\n## Critical Context\n-\n"
    )
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = lambda request: Reply(
            text=summary if is_compaction(request.body) else "ok"
        )
        lines = "".join(f"Message {i}: " + "words " * 100 + "\n" for i in range(24))
        chat = ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url]
        first = run_brim(chat, data_dir=tmp_path, stdin=lines)
        assert first.returncode == 0, first.stderr
        conversation = first.of_type("window")[0]["conversation"]
        n = len([e for e in first.of_type("compaction") if e["phase"] == "finished"])
        commands = f"/compaction\n/compaction show {n}\n/compaction restore {n}\n"
        run = run_brim(
            [*chat, "--conversation", conversation],
            data_dir=tmp_path,
            stdin=commands + f"/compaction restore {n} anyway\n",
        )
    assert run.returncode == 0, run.stderr
    (listed,) = run.of_type("compaction_list")
    assert [c["number"] for c in listed["compactions"]] == list(range(1, n + 1))
    assert [c["live"] for c in listed["compactions"]] == [False] * (n - 1) + [True]
    (view,) = run.of_type("compaction_view")
    assert view["messages"] and view["restorable"] is True
    assert view["fits"] is False and view["tokens"] >= view["compact_at"]
    waiting = [e for e in run.of_type("notice") if e["kind"] == "restore_unconfirmed"]
    assert waiting and f"`/compaction restore {n} anyway`" in waiting[0]["text"]
    (restored,) = run.of_type("compaction_restored")
    assert restored["messages_restored"] == len(view["messages"])

    table = run_brim(["conversations", "compactions", conversation], data_dir=tmp_path)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[n - 1].endswith("restored")
    shown = run_brim(
        ["conversations", "compactions", conversation, "--show", "1", "--json"],
        data_dir=tmp_path,
    )
    assert json.loads(shown.stdout)["messages"][0]["content"].startswith("Message 0: ")


def test_headless_context_show_prints_what_the_model_saw_as_one_json_line(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096) as fake:
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="Hello there\nAnd again\n/context show\n",
        )
        sent = fake.chat_requests[-1].body
    assert run.returncode == 0, run.stderr
    (view,) = run.of_type("request_view")
    assert isinstance(sent, dict)
    assert [m["content"] for m in view["messages"]] == [m["content"] for m in sent["messages"]]
    assert view["rendered_by"] == "llama-server's /apply-template"
    assert "And again" in view["rendered"]
    parts = {p["part"]: p for p in view["parts"]}
    assert parts["new"]["messages"] == 1 and parts["kept"]["messages"] == 2
    assert sum(p["tokens"] for p in view["parts"]) == view["counted_tokens"]
    assert [c["change"] for c in view["changes"]] == ["added", "added"]
    assert len(run.of_type("last_request")) == 2
