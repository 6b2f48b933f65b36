"""A checkpoint cannot lose the task: refusal of non-checkpoints, the carried sections, the
summary's cap, and how the summary reaches the model (one system message, after the prompt)."""

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.checkpoint import (
    carry_forward,
    covered_keys,
    parse_checkpoint,
    render_checkpoint,
    stored_checkpoint,
)
from engine.context.compaction import CompactionPlan, compact
from engine.context.replay import Replay, ReplayPrefix
from engine.messages import Message, alternating, assistant, system, user

from .histories import FakeSummarizer, Ids, count, cycle, is_guided_question, pinned, summaries

WINDOW = 8_000

PRIOR = (
    "## Goal\n- Port the parser to Rust.\n## Constraints & Preferences\n- no unsafe code\n"
    "## Covered So Far\n- `src/lex.py`\n## Progress\n### Done\n- ported the lexer\n"
    "### In Progress\n- (none)\n### Blocked\n- (none)\n## Key Decisions\n- use nom\n"
    "## Next Steps\n- port the parser\n## Critical Context\n- (none)\n"
)


def _history_with_prior(prior: str = PRIOR) -> list[Message]:
    from engine.context.checkpoint import summary_content

    ids = Ids()
    msgs = [
        system("You are Brim."),
        Message(role="system", content=summary_content(prior), kind="summary"),
        Message(role="user", content="[continue]", kind="continuation"),
        user("keep going"),
    ]
    for _ in range(12):
        msgs.extend(cycle(ids, 2_000))
    msgs.append(assistant("halfway"))
    return msgs


def _sections(text: str) -> dict[str, list[str]]:
    return parse_checkpoint(text)[1]


def test_an_answer_with_none_of_the_checkpoints_headings_never_enters_the_checkpoint():
    """ "Noted." is refused (free-form and guided alike); what the new checkpoint holds is
    what Brim carries itself: the earlier checkpoint's task and the files read."""
    msgs = _history_with_prior()
    fake = FakeSummarizer(text="Noted.")
    result = asyncio.run(compact(msgs, window=WINDOW, count_message=count, summarize=fake))
    assert any(map(is_guided_question, fake.requests))  # the guided answers were "Noted." too
    assert result.ok and result.source == "mechanical"
    assert result.freeform_refused
    assert "Noted" not in result.checkpoint and "Noted" not in summaries(result.messages)[0].content
    sections = _sections(result.checkpoint)
    assert [ln for ln in sections["Goal"] if ln] == ["- Port the parser to Rust."]
    assert "src/lex.py" in covered_keys(result.checkpoint)


def test_a_checkpoint_that_forgets_the_task_gets_the_earlier_goal_rules_done_and_decisions():
    forgetful = (
        "## Goal\n- (none)\n## Progress\n### Done\n- ported the parser\n"
        "## Next Steps\n- check the parser against the lexer\n"
    )
    msgs = _history_with_prior()
    fake = FakeSummarizer(text=forgetful)
    result = asyncio.run(compact(msgs, window=WINDOW, count_message=count, summarize=fake))
    assert result.ok
    sections = _sections(stored_checkpoint(summaries(result.messages)[0]))
    assert sections["Goal"][0] == "- Port the parser to Rust."
    assert "- no unsafe code" in sections["Constraints & Preferences"]
    assert [ln for ln in sections["Done"] if ln] == ["- ported the lexer", "- ported the parser"]
    assert "- use nom" in sections["Key Decisions"]
    assert (
        "- check the parser against the lexer" in sections["Next Steps"]
    )  # the new answer's own sections stay


def test_a_summary_that_runs_for_pages_is_capped_at_the_summarys_budget_from_the_window():
    pages = "## Goal\n- Port the parser.\n## Critical Context\n" + "\n".join(
        f"- the data of src/call_{i}.py was read in step {i} of the pass" for i in range(400)
    )
    msgs = _history_with_prior()
    fake = FakeSummarizer(text=pages)
    result = asyncio.run(compact(msgs, window=WINDOW, count_message=count, summarize=fake))
    assert result.ok
    summary = summaries(result.messages)[0]
    # summary_max_tokens(8000) = 1200 (15% of the window): what the model is sent for it.
    assert count(summary) <= 1200 + 4
    sections = _sections(stored_checkpoint(summary))
    assert "- Port the parser." in sections["Goal"]
    assert 0 < len(sections["Critical Context"]) < 400  # the oldest entries went, silently
    assert not any("left out" in ln for ln in result.checkpoint.splitlines())


def test_the_summary_reaches_the_model_inside_its_one_system_message_after_the_prompt():
    prompt = system("You are Brim.")
    summary = Message(role="system", content="[Checkpoint: …]\n\n## Goal\n- x", kind="summary")
    wire = alternating([prompt, pinned(), summary, user("[continue]"), user("hi")])
    assert [m.role for m in wire] == ["system", "user"]
    assert wire[0].content.startswith("You are Brim.\n\n[Checkpoint: …]")
    # A summary an older Brim saved as an assistant turn is framed the same way.
    old = Message(role="assistant", content="[Checkpoint: …]", kind="summary")
    assert [m.role for m in alternating([prompt, old, user("hi")])] == ["system", "user"]


def test_a_compaction_on_the_agents_own_model_replays_the_conversation_as_last_sent():
    msgs = _history_with_prior()
    sent = tuple(alternating(msgs[:8]))
    tools = ({"type": "function", "function": {"name": "read_file", "parameters": {}}},)
    replay = Replay(sent, tools, sum(map(count, sent)), at=msgs[8].created)
    fake = FakeSummarizer()
    result = asyncio.run(
        compact(msgs, window=WINDOW, count_message=count, summarize=fake, replay=replay)
    )
    assert result.ok
    request = fake.requests[0]
    assert sent[-1].role == "tool"
    assert list(request.messages[: len(sent)]) == list(sent)  # the same prefix, unchanged
    assert "[Brim compaction]" in request.messages[-1].content
    assert request.tools == tools
    # What came after that request follows it, before the instruction, as far as the
    # checkpoint replaces it; the newest messages, which the tail keeps verbatim, are left
    # out (the engine would evaluate them twice: here and after the checkpoint).
    between = request.messages[len(sent) : -1]
    assert between and len(between) < len(msgs) - 8
    assert [m.content for m in between] == [m.content for m in msgs[8 : 8 + len(between)]]
    assert all(m.content != "halfway" for m in request.messages)
    assert any(m.content == "halfway" for m in result.messages)


def test_the_pre_summary_hook_gets_the_prefix_the_checkpoint_request_replays():
    """The memory extraction runs just before the summary: given the same prefix, its own
    request can share the engine's cache with the checkpoint request after it."""
    msgs = _history_with_prior()
    sent = tuple(alternating(msgs[:8]))
    tools = ({"type": "function", "function": {"name": "read_file", "parameters": {}}},)
    replay = Replay(sent, tools, sum(map(count, sent)), at=msgs[8].created)
    given: list[ReplayPrefix | None] = []

    async def hook(plan: CompactionPlan, prefix: ReplayPrefix | None) -> None:
        given.append(prefix)

    fake = FakeSummarizer()
    asyncio.run(
        compact(msgs, window=WINDOW, count_message=count, summarize=fake, replay=replay,
                before_summarize=hook)
    )  # fmt: skip
    (prefix,) = given
    assert prefix is not None and prefix.replay is replay and prefix.tools == tools
    assert prefix.newer  # what came after the request, as far as the checkpoint replaces it
    request = fake.requests[0]
    rebuilt = prefix.messages(request.messages[-1].content)
    assert rebuilt[:-1] == request.messages[:-1]  # the same messages before the instruction
    assert rebuilt[-1].content == request.messages[-1].content
    given.clear()
    asyncio.run(
        compact(msgs, window=WINDOW, count_message=count, summarize=FakeSummarizer(),
                before_summarize=hook)
    )  # fmt: skip
    assert given == [None]  # no replay (another summarizer model, nothing sent yet)


entries = st.lists(st.text("abcdefgh ", min_size=1, max_size=12).map(str.strip), max_size=4)


@settings(max_examples=80, deadline=None)
@given(entries, entries, entries, entries)
def test_no_entry_of_the_task_sections_is_lost_whatever_the_new_checkpoint_says(
    goal, rules, done, new_done
):
    def bullets(items: list[str]) -> list[str]:
        return [f"- {i}" for i in items if i]

    prior = render_checkpoint(
        {
            "Goal": bullets(goal),
            "Constraints & Preferences": bullets(rules),
            "Done": bullets(done),
        }
    )
    merged = _sections(carry_forward(render_checkpoint({"Done": bullets(new_done)}), [prior]))

    def keys(lines: list[str]) -> set[str]:
        return {" ".join(ln[2:].strip(".").lower().split()) for ln in lines if ln.strip()}

    for title, items in (("Goal", goal), ("Constraints & Preferences", rules), ("Done", done)):
        wanted = {" ".join(i.strip(".").lower().split()) for i in items if i.strip(" .")}
        assert wanted <= keys(merged.get(title, [])) | {"(none)"}


def test_the_replayed_compaction_fits_when_the_last_request_was_already_past_the_threshold():
    """On a 4,096 window the last request sat at 81% and a 460-token turn came after it:
    the replay still fits (that turn stays verbatim in the tail, so it is left out)."""
    msgs = _history_with_prior()
    sent = tuple(alternating(msgs[:8]))
    newest = user("tables rows columns " * 150)  # ~460 tokens by this counter
    history = [*msgs, newest]
    replay = Replay(sent, (), 3321, at=newest.created)
    fake = FakeSummarizer()
    result = asyncio.run(
        compact(history, window=4096, count_message=count, summarize=fake, replay=replay)
    )
    assert result.ok
    request = fake.requests[0]
    assert list(request.messages[: len(sent)]) == list(sent)
    assert "[Brim compaction]" in request.messages[-1].content
    assert request.max_tokens >= 256
    assert 3321 + count(request.messages[-1]) + request.max_tokens <= 4096
