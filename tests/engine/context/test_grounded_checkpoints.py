"""A summarizer's line enters the checkpoint only where the conversation supports it (issue
41): what the bundled SmolLM2 wrote into two checkpoints at a 1K pin, and what SmolLM2 wrote
on vLLM, never reaches the model again; a grounded line beside a bad one is kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import AgentConfig
from engine.context.checkpoint import checkpoint_entries, stored_checkpoint
from engine.context.compaction import compact
from engine.context.grounding import ground_of, grounded_text
from engine.context.guided import guided_checkpoint
from engine.context.summarizer import REPLAY_QUESTION_MARK
from engine.events import CompactionEvent, ErrorEvent, Event
from engine.messages import Message, assistant, system, user
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_provider import Answer, InProcessEngine, Request

from .histories import count, guided_answers, summaries

# The guided answers SmolLM2 gave, recorded on main at 207f7a1 (the embedded model, two
# compactions at a 1K pin, then "Thanks." was answered with the first), and on vLLM.
RECORDED = {
    "trying to get done": "The user is trying to get the transcript removed from their text.",
    "requirements or preferences": "The user stated none.",
    "what was decided": "The user has already answered the question.",
    "happen next": "Premise of the past. I'm sorry to hear that.",
    "exact names": (
        "The user is trying to get the user to stop the task and ask a question; "
        "Lady Nova Coralathing."
    ),
}
# The same lines as one free-form checkpoint: refused line by line as well.
RECORDED_CHECKPOINT = (
    "## Goal\n- The user is trying to get the transcript removed from their text.\n"
    "## Constraints & Preferences\n- The user stated none.\n"
    "## Key Decisions\n- The user has already answered the question.\n"
    "## Next Steps\n- Premise of the past. I'm sorry to hear that.\n"
    "## Critical Context\n- Lady Nova Coralathing.\n"
)
# What of them could reach the model, each a piece no conversation below ever holds.
INVENTED = (
    "transcript",
    "stated none",
    "already answered",
    "Premise",
    "sorry",
    "stop the task",
    "Nova",
    "Coralathing",
)
# A small window: the conversation below compacts at least twice in it.
WINDOW = 2048
TRIP = (
    "I am planning a trip to Lisbon with my sister in May. My budget for the whole trip is "
    "1200 euros. Please list three museums worth a visit for someone who likes tiles."
)


def _recorded_answer(request: Request) -> Answer:
    body = {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}
    if not is_compaction(body):
        return Answer("Noted.")
    last = request.messages[-1].content
    if REPLAY_QUESTION_MARK not in last and "Question:" not in last:
        return Answer(RECORDED_CHECKPOINT)
    for key, answer in RECORDED.items():
        if key in last:
            return Answer(answer)
    return Answer("none")


def _turns() -> list[str]:
    days = [
        f"Day {i} of the plan: a walk from the river to the castle, coffee near the tram line, "
        f"and a look at the tiles on the old houses of Alfama on the way back. " * 6
        for i in range(1, 17)
    ]
    return [TRIP, *days, "Thanks."]


def test_the_recorded_invented_lines_never_reach_a_request_after_two_compactions(
    tmp_path: Path,
):
    engine = InProcessEngine(window=WINDOW)
    engine.responder = _recorded_answer
    events: list[Event] = []
    config = AgentConfig(name="t", provider="llamacpp", model="fake-model")
    paths = BrimPaths.resolve(tmp_path / "home")

    async def run() -> None:
        session = ChatSession(config, paths, events.append, provider=engine, workspace=tmp_path)
        await session.start()
        try:
            for text in _turns():
                await session.send(text)
        finally:
            await session.close()

    asyncio.run(run())
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert len(finished) >= 2, f"only {len(finished)} compactions"
    first = next(i for i, r in enumerate(engine.requests) if is_compaction(_body(r)))
    after = [r for r in engine.requests[first:] if not is_compaction(_body(r))]
    assert after and after[-1].messages[-1].content.startswith("Thanks.")
    for request in after:
        sent = "\n".join(m.content for m in request.messages)
        for piece in INVENTED:
            assert piece not in sent, (piece, sent[:800])
    # What the checkpoint still holds is the user's own: the request, in their words.
    thanks = "\n".join(m.content for m in after[-1].messages)
    assert "I am planning a trip to Lisbon with my sister in May." in thanks


def _body(request: Request) -> dict:
    return {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}


def test_recorded_lines_are_refused_one_sentence_at_a_time_and_the_grounded_rest_is_kept():
    ground = ground_of([TRIP])
    kept, refused = grounded_text(
        "Lisbon, May, 1200 euros; Lady Nova Coralathing. I'm sorry to hear that.", ground
    )
    assert kept == "Lisbon, May, 1200 euros"
    assert len(refused) == 2


def test_a_guided_answer_keeps_its_grounded_sentences_and_loses_only_the_invented_one():
    summarize = guided_answers(
        {
            "trying to get done": "Plan a trip to Lisbon in May with the user's sister.",
            "requirements or preferences": "The user stated none.",
            "what was decided": "The budget is 1200 euros. Ankit approved the hotel.",
            "happen next": "List three museums with tiles. Premise of the past.",
            "exact names": "Lisbon, May, 1200 euros",
        }
    )
    checkpoint = asyncio.run(guided_checkpoint(TRIP, summarize, ground=ground_of([TRIP])))
    assert checkpoint is not None
    entries = checkpoint_entries(checkpoint)
    assert entries["Goal"] == ["Plan a trip to Lisbon in May with the user's sister."]
    assert entries["Key Decisions"] == ["The budget is 1200 euros."]
    assert entries["Next Steps"] == ["List three museums with tiles."]
    assert entries["Critical Context"] == ["Lisbon, May, 1200 euros"]
    assert "Constraints & Preferences" not in entries  # "The user stated none." is no entry
    assert "Ankit" not in checkpoint and "Premise" not in checkpoint


def _trip_history() -> list[Message]:
    msgs = [system("You are Brim. Read the transcript and stop the task when asked."), user(TRIP)]
    for i in range(10):
        msgs += [
            user(f"Question {i}: which museum with tiles opens on day {i}? " + "tiles " * 80),
            assistant(f"Day {i}: the museum opens at nine. " + "hours " * 80),
        ]
    return msgs


def test_a_free_form_checkpoint_loses_its_invented_lines_and_keeps_its_grounded_ones():
    answer = RECORDED_CHECKPOINT.replace(
        "## Key Decisions\n", "## Key Decisions\n- Visit the museum with tiles on day 3.\n"
    )

    async def summarize(request):
        from engine.context.summarizer import SummaryResult

        return SummaryResult(answer, "stop")

    result = asyncio.run(
        compact(_trip_history(), window=4_000, count_message=count, summarize=summarize)
    )
    assert result.ok and result.source == "freeform"
    entries = checkpoint_entries(result.checkpoint)
    assert entries["Key Decisions"] == ["Visit the museum with tiles on day 3."]
    shown = summaries(result.messages)[0].content
    for piece in INVENTED:
        assert piece not in result.checkpoint and piece not in shown, piece


def test_brims_own_prompt_is_no_ground_for_a_line():
    """The system prompt here says "transcript" and "stop the task": a line that takes them
    from it is still refused, as the conversation never used them."""
    summarize = guided_answers(
        {
            "trying to get done": "The user wants the transcript of the museum tiles.",
            "happen next": "Stop the task at the museum with tiles.",
            "what was decided": "Visit the museum with tiles on day 3.",
            "exact names": "Museum tiles, day 3.",
        }
    )
    result = asyncio.run(
        compact(_trip_history(), window=4_000, count_message=count, summarize=summarize)
    )
    assert result.ok and result.source == "guided"
    assert checkpoint_entries(result.checkpoint)["Critical Context"] == ["Museum tiles, day 3."]
    assert "transcript" not in result.checkpoint and "Stop" not in result.checkpoint


def test_an_invented_line_an_earlier_checkpoint_carried_is_not_carried_on():
    prior = (
        "## Goal\n- The user asked: \u201cPlan the Lisbon trip.\u201d\n"
        "## Constraints & Preferences\n- The user stated none.\n"
        "## Key Decisions\n- The user has already answered the question.\n"
        "- Stay five nights in Alfama.\n"
    )
    from engine.context.checkpoint import summary_content

    msgs = _trip_history()
    msgs[1:1] = [
        Message(role="assistant", content=summary_content(prior), kind="summary"),
        Message(role="user", content="Let us continue.", kind="continuation"),
    ]
    result = asyncio.run(
        compact(msgs, window=4_000, count_message=count, summarize=guided_answers({}))
    )
    (summary,) = summaries(result.messages)
    entries = checkpoint_entries(stored_checkpoint(summary))
    assert entries["Key Decisions"] == ["Stay five nights in Alfama."]
    assert "Constraints & Preferences" not in entries
    assert "already answered" not in summary.content and "stated none" not in summary.content


NULLS = ["none", "None.", "N/A", "n/a", "Nothing.", "The user stated none.",
         "No specific requirements were stated.", "Nothing was decided yet."]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(NULLS),
    st.lists(st.sampled_from([RECORDED[k] for k in RECORDED] + ["Lady Nova Coralathing."])),
    st.lists(
        st.sampled_from(
            [
                "The budget is 1200 euros.",
                "Plan a trip to Lisbon in May.",
                "List three museums worth a visit.",
                "The user's sister comes too.",
                "Museums with tiles.",
            ]
        ),
        min_size=1,
    ),
    st.randoms(use_true_random=False),
)
def test_whatever_the_mix_the_grounded_sentences_stay_and_no_invented_one_does(
    null, invented, grounded, rnd
):
    sentences = [null, *invented, *grounded]
    rnd.shuffle(sentences)
    text = " ".join(s if s[-1] in ".;" else f"{s}." for s in sentences)
    kept, _ = grounded_text(text, ground_of([TRIP]))
    for sentence in grounded:
        assert sentence in kept
    for piece in INVENTED:
        assert piece not in kept
    assert "none" not in kept.lower() and "n/a" not in kept.lower()


def test_an_apology_behind_a_label_the_model_echoed_is_refused():
    """Seen on the real bundled model in a clean clone's run: the guided answer began with
    the question's own words, and the apology came after them."""
    from engine.context.grounding import ground_of, line_refusal

    # The model's own earlier answer holds the same apology: its words are ground, its voice
    # is not a fact.
    ground = ground_of(
        [
            "Note 1: build server 1 runs job alpha-1. Acknowledge briefly.",
            "I'm sorry for any confusion. Please go ahead and share them with me.",
        ]
    )
    line = "One short sentence: \"I'm sorry for any confusion."
    assert line_refusal(line, ground) is not None
    assert line_refusal("Build server 1 runs job alpha-1.", ground) is None
