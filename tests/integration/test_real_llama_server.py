"""Brim against a real llama-server (llama.cpp) on loopback, not a fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench._llama_server import RealLlamaServer, running_llama_server
from tests.helpers.cli import run_brim

# The bound the other real-server modules have: a busy two-core machine runs the compaction
# test's two dozen turns (and the session server's start, counted in the first test) in
# minutes, past the suite's default 300 s; a real hang still fails, at 900 s.
pytestmark = [pytest.mark.slow, pytest.mark.llama_server, pytest.mark.timeout(900)]


def test_probe_reports_the_per_slot_window_of_a_two_slot_server(
    llama_server: RealLlamaServer, tmp_path: Path
):
    run = run_brim(
        ["probe", "--provider", "llamacpp", "--base-url", llama_server.url, "--json"],
        data_dir=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["provider"] == "llamacpp"
    assert report["window"] == 2048
    assert report["served"] == 2048
    assert report["slots"] == 2
    assert report["source"] == "server"
    assert report["model_max"] == 8192
    assert report["warnings"] == []  # two explicit slots do not share one pool


def test_a_headless_chat_streams_and_reports_real_usage_and_cache_reuse(
    llama_server: RealLlamaServer, tmp_path: Path
):
    run = run_brim(
        [
            "chat",
            "--headless",
            "--provider",
            "llamacpp",
            "--base-url",
            llama_server.url,
            "--max-tokens",
            "12",
        ],
        data_dir=tmp_path,
        stdin="Name one colour.\nName another colour.\n",
    )
    assert run.returncode == 0, run.stderr
    assert run.of_type("error") == []
    assert run.of_type("window")[0]["window"] == 2048
    assert "".join(d["text"] for d in run.of_type("delta")).strip()
    usages = run.of_type("usage")
    contexts = run.of_type("context")
    assert len(usages) == 2 and len(contexts) == 2
    for usage, context in zip(usages, contexts, strict=True):
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert isinstance(usage["cached_tokens"], int)
        assert context["used"] == usage["prompt_tokens"]
        assert context["window"] == 2048
    # The second request repeats the first as its prefix: the server reuses its KV cache.
    assert usages[1]["cached_tokens"] > 0
    assert usages[1]["prompt_tokens"] > usages[0]["prompt_tokens"]
    ends = run.of_type("turn_end")
    assert len(ends) == 2 and all(e["completion_tokens"] > 0 for e in ends)
    # The receipt's cache figure is the server's own, for the turn's request.
    assert [e["cached_tokens"] for e in ends] == [u["cached_tokens"] for u in usages]


def test_brims_count_matches_what_llama_server_reports(
    llama_server: RealLlamaServer, tmp_path: Path
):
    """The exact count (`/apply-template` + `/tokenize`) equals the server's prompt tokens."""
    import asyncio

    from engine.messages import system, user
    from engine.providers.base import ChatOptions, StreamDone
    from engine.providers.registry import make_provider

    async def scenario() -> tuple[int | None, int | None]:
        provider = make_provider("llamacpp", llama_server.url)
        messages = [system("You are terse."), user("Say yes — or no? ünïcödé")]
        try:
            counted = await provider.count_prompt("", messages, [])
            reported = None
            async for item in provider.stream_chat("", messages, ChatOptions(max_tokens=4)):
                if isinstance(item, StreamDone):
                    reported = item.usage.prompt_tokens
        finally:
            await provider.aclose()
        return counted, reported

    counted, reported = asyncio.run(scenario())
    assert counted is not None and counted == reported


def test_a_workspace_on_a_model_whose_template_has_no_tools_is_told_and_sent_none(
    llama_server: RealLlamaServer, tmp_path: Path
):
    """The real server reports `chat_template_caps.supports_tools: false` for SmolLM2 and
    would drop the tools unseen: Brim sends none, counts none, and says so once."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    run = run_brim(
        [
            *("chat", "--headless", "--provider", "llamacpp", "--base-url", llama_server.url),
            *("--max-tokens", "8", "--workspace", str(ws)),
        ],
        data_dir=tmp_path / "home",
        stdin="What does calc.py do?\n",
    )
    assert run.returncode == 0, run.stderr
    (notice,) = [n for n in run.of_type("notice") if "cannot call tools" in n["text"]]
    assert str(ws) in notice["text"]
    (usage,) = run.of_type("usage")
    (context,) = run.of_type("context")
    # Brim's count of what it sent (no tool schemas) is what the server evaluated.
    assert context["used"] == usage["prompt_tokens"] and context["estimated"] is False
    report = run.of_type("context_report")[-1]
    (tools_row,) = [c for c in report["categories"] if c["name"] == "Tool schemas"]
    assert tools_row["tokens"] == 0


def test_after_a_trim_llama_server_shifts_the_kept_messages_instead_of_evaluating_them(
    tmp_path: Path,
):
    """A trim drops the oldest messages; the rest sits at new positions. Brim asks for
    llama-server's chunk reuse on every request (`n_cache_reuse`), so the server moves the
    kept messages in its KV cache: the second request evaluates a handful of tokens, not the
    ~400 it kept (without it, only the system prompt would come from the cache). One slot:
    with several, the server may give the trimmed request another slot, whose cache holds
    none of it (it picks by the common prefix, here the system prompt alone)."""
    import asyncio

    from engine.messages import assistant, system, user
    from engine.providers.base import ChatOptions, StreamDone, Usage
    from engine.providers.registry import make_provider

    turns = []
    for i in range(12):
        turns.append(user(f"Note {i}: host beta-{i} runs job delta-{i} every {i + 4} minutes."))
        turns.append(assistant(f"Noted: beta-{i} runs delta-{i} every {i + 4} minutes."))
    head = system("You are a terse assistant who keeps notes.")
    full = [head, *turns, user("Which host runs delta-11?")]
    trimmed = [head, *turns[8:], user("Which host runs delta-11?")]

    async def usage_of(provider, messages) -> Usage:  # type: ignore[no-untyped-def]
        async for item in provider.stream_chat("", messages, ChatOptions(max_tokens=4)):
            if isinstance(item, StreamDone):
                return item.usage
        raise AssertionError("no answer")

    async def scenario(url: str) -> tuple[Usage, Usage]:
        provider = make_provider("llamacpp", url)
        try:
            return await usage_of(provider, full), await usage_of(provider, trimmed)
        finally:
            await provider.aclose()

    with running_llama_server(tmp_path, ctx=4096, parallel=1) as server:
        first, second = asyncio.run(scenario(server.url))
    assert first.prompt_tokens and second.prompt_tokens and second.cached_tokens is not None
    evaluated = second.prompt_tokens - second.cached_tokens
    assert second.prompt_tokens > 300
    assert evaluated < 64, (second.prompt_tokens, second.cached_tokens)


def test_after_a_compaction_llama_server_reuses_the_kept_messages_ahead_of_the_checkpoint(
    tmp_path: Path,
):
    """A compaction keeps the newest messages verbatim. On llama-server, Brim lays the
    checkpoint after the kept messages, just before the current request, so the server's
    chunk reuse finds them in its cache (moved to their new place) and the first request
    after the compaction evaluates the checkpoint and the request, not the kept messages
    again. Laid ahead of them, the checkpoint is new text that ends the server's matching:
    only the system prompt came from the cache."""
    import asyncio

    from engine.config import AgentConfig
    from engine.events import CompactionEvent, Event, UsageEvent
    from engine.messages import alternating
    from engine.paths import BrimPaths
    from engine.providers.embedded import default_model_path
    from engine.providers.gguf_tokenizer import GgufTokenizer
    from engine.session import ChatSession
    from engine.store import Store

    def turn(i: int) -> str:
        log = "\n".join(
            f"  {i:02d}:{m:02d}:07 worker-{m % 4} shard {i * 7 + m} committed "
            f"{(i + 1) * (m + 3) * 11} rows in {m * 13 + 40} ms (queue depth {m + i % 5})"
            for m in range(5)
        )
        return (
            f"Step {i}: the service on port {8000 + i} restarted after job batch-{i} wrote "
            f"{i * 37} records to /srv/data/part-{i}.csv. The log of that run:\n{log}\n"
            "Acknowledge briefly."
        )

    # Turns of ~250 tokens on a 4,096 window: the compaction's request replays the
    # conversation the server holds (a 2,048 window leaves no room for that replay).
    turns = [turn(i) for i in range(24)]
    events: list[Event] = []

    async def run(url: str) -> str:
        agent = AgentConfig(
            name="reuse", provider="llamacpp", base_url=url, model="", max_tokens=24
        )
        session = ChatSession(agent, BrimPaths.resolve(tmp_path), events.append)
        await session.start()
        try:
            for text in turns:
                await session.send(text)
                if any(isinstance(e, CompactionEvent) and e.phase == "finished" for e in events):
                    break
        finally:
            await session.close()
        return session.conversation_id

    with running_llama_server(tmp_path, ctx=4096, parallel=1) as server:
        conversation = asyncio.run(run(server.url))

    finished = next(
        i for i, e in enumerate(events) if isinstance(e, CompactionEvent) and e.phase == "finished"
    )
    after = next(e for e in events[finished:] if isinstance(e, UsageEvent))
    with Store.open(BrimPaths.resolve(tmp_path).db_path) as store:
        live = store.messages(conversation)
    # The messages the compaction kept verbatim before the request it was made for
    # (wherever the checkpoint stands), counted as the server frames them.
    request = max(i for i, m in enumerate(live) if m.role == "user" and m.kind == "chat")
    kept = [m for m in live[1:request] if m.kind == "chat"]
    tokenizer = GgufTokenizer(default_model_path())
    prompt_alone = len(tokenizer.request_tokens(alternating(live[:1])))
    ahead = len(tokenizer.request_tokens(alternating(live[:1] + kept))) - prompt_alone
    assert ahead > 200, "the compaction kept too little before the request to tell"
    assert after.prompt_tokens and after.cached_tokens is not None
    # The kept messages came from the cache, less the previous answer, which the
    # compaction's own request displaced (a few dozen tokens at most).
    assert after.cached_tokens >= prompt_alone + ahead - 48, (
        after.prompt_tokens,
        after.cached_tokens,
        prompt_alone,
        ahead,
    )
