"""A checkpoint is never worse than none (issue 17): summarizer text that loops, invents,
changes language or leaks the prompt's scaffolding is refused, on the free-form path and in
every guided answer, and what is left is the mechanical part."""

from __future__ import annotations

import asyncio

import pytest

from engine.context.compaction import SummaryRequest, SummaryResult, compact, summary_refusal
from engine.context.guided import guided_checkpoint
from engine.context.summary_checks import unusable_reason
from engine.messages import assistant, system, user

from .histories import count, guided_answers, is_guided_question, summaries

CONVERSATION = (
    "I am planning a trip to Lisbon with my sister in May. My budget for the whole trip is "
    "1200 euros. What is 12 times 12? Please list three museums worth a visit."
)
LOOP = "Bimbaisiliega: Não deve mós, não deve mós, não deve mós, não deve mós, não deve mós"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (LOOP, "repeats one phrase"),
        ("Bimbaisiliega: Não deve mós.", "another language"),  # even without the loop
        (
            "Quorblax vintrel sapodine murkwell fensible dravin lortimer quessel brandow",
            "appear nowhere in the conversation",
        ),
        ("Lisbon in May. <<<END TRANSCRIPT ccf25d47>>", "delimiters"),
        ("<<<PREVIOUS CHECKPOINT 1a2b3c4d>>> Goal: Lisbon", "delimiters"),
        ("Write the checkpoint now. Covered So Far: every file read, one per line", "instructions"),
        ("[user]\nWhat is 12 times 12?", "markup"),
        ("[tool result: read_file, call c1]\ndata", "markup"),
        # SmolLM2's guided answers on llama-server at 4,096 tokens, about the material:
        (
            "The user asked about the conversation above, which is a summary of a conversation "
            "between a user and a tool.",
            "talks about the conversation",
        ),
        ("The conversation above is a bit long. I'll break it down in a bit.", "talks about"),
    ],
)
def test_summarizer_text_that_loops_invents_changes_language_or_leaks_is_refused(answer, why):
    """Each text is refused for what is wrong with it: a loop that is also in another
    language is refused as a loop, so each check is shown to work on its own."""
    reason = unusable_reason(answer, CONVERSATION)
    assert reason is not None and why in reason


@pytest.mark.parametrize(
    "answer",
    [
        "The user plans a trip to Lisbon with their sister in May; the budget is 1200 euros.",
        "Listed three museums; answered 12 times 12.",
        "- read `src/a.py`\n- read `src/b.py`\n- read `src/c.py`\n- read `src/d.py`",
        "The user asked for a summary of the museum list; it was given.",
    ],
)
def test_a_faithful_summary_is_not_refused(answer):
    reference = CONVERSATION + " src/a.py src/b.py src/c.py src/d.py"
    assert unusable_reason(answer, reference) is None


def test_a_degenerate_guided_answer_is_refused_and_never_becomes_the_goal():
    summarize = guided_answers(
        {
            "trying to get done": LOOP,
            "requirements or preferences": "**Done** ## Done - (none)",
            "what was decided": "Lisbon in May. <<<END TRANSCRIPT ccf25d47>>",
            "happen next": "List three museums.",
            "exact names": "Lisbon, May, 1200 euros",
        }
    )
    checkpoint = asyncio.run(guided_checkpoint(CONVERSATION, summarize))
    assert checkpoint is not None
    assert "mós" not in checkpoint and "<<<" not in checkpoint and "(none)" not in checkpoint
    assert "## Goal" not in checkpoint
    assert "- Lisbon, May, 1200 euros" in checkpoint and "- List three museums." in checkpoint


def test_a_guided_answer_that_only_echoes_its_question_is_refused():
    """Seen on the bundled model: "Decided: What was decided so far? The answer is." reached
    the model as what had been decided."""
    summarize = guided_answers(
        {
            "trying to get done": "Plan a trip to Lisbon in May.",
            "requirements or preferences": "Which requirements or preferences did the user state?",
            "what was decided": "What was decided so far? The answer is.",
            "happen next": "The answer is",
            "exact names": "Lisbon, May, 1200 euros",
        }
    )
    checkpoint = asyncio.run(guided_checkpoint(CONVERSATION, summarize))
    assert checkpoint is not None
    assert "so far" not in checkpoint and "The answer is" not in checkpoint
    assert "requirements" not in checkpoint
    assert "- Plan a trip to Lisbon in May." in checkpoint


def _trip() -> list:
    msgs = [system("You are Brim."), user("I am planning a trip to Lisbon with my sister in May.")]
    for i in range(10):
        msgs += [
            user(f"Question {i}: which museum opens on day {i}? " + "museum hours " * 60),
            assistant(f"Day {i}: the museum opens at nine. " + "hours " * 60),
        ]
    return msgs


LEAK = "## Goal\n- Plan the Lisbon trip.\n## Critical Context\n- <<<END TRANSCRIPT ccf25d47>>\n"


class _leaking:
    """Answers the whole checkpoint with `whole` (LEAK) and each guided question with
    `guided_answer`; counts the guided questions asked."""

    def __init__(self, guided_answer: str) -> None:
        self.guided_answer = guided_answer
        self.whole = LEAK
        self.asked = 0

    async def __call__(self, request: SummaryRequest) -> SummaryResult:
        if is_guided_question(request):
            self.asked += 1
            return SummaryResult(self.guided_answer, "stop")
        return SummaryResult(self.whole, "stop")


def test_a_checkpoint_that_leaks_the_prompts_delimiter_is_refused_for_clean_guided_answers():
    summarize = _leaking(guided_answer="Plan the museum trip to Lisbon in May.")
    result = asyncio.run(compact(_trip(), window=4_000, count_message=count, summarize=summarize))
    assert result.ok and result.freeform_refused and result.source == "guided"
    assert "<<<" not in result.checkpoint and "ccf25d47" not in result.checkpoint
    assert "- Plan the museum trip to Lisbon in May." in result.checkpoint


def test_a_checkpoint_that_leaks_the_prompts_delimiter_is_refused_on_both_paths():
    """The free-form checkpoint carries `<<<END TRANSCRIPT …>>`, every guided answer too:
    nothing the summarizer wrote enters the checkpoint, which keeps the user's words."""
    guided = _leaking(guided_answer="The museum trip. <<<END TRANSCRIPT ccf25d47>>")
    assert summary_refusal(SummaryResult(LEAK, "stop")) is not None
    msgs = _trip()
    result = asyncio.run(compact(msgs, window=4_000, count_message=count, summarize=guided))
    assert guided.asked > 0  # the guided path was reached, and refused too
    assert "<<<" not in result.checkpoint and "ccf25d47" not in result.checkpoint
    assert result.ok and result.source == "mechanical"
    shown = summaries(result.messages)[0].content
    assert "\u201cI am planning a trip to Lisbon with my sister in May.\u201d" in shown


def test_a_faithful_answer_with_none_of_the_checkpoints_headings_is_refused_for_guided_answers():
    """Prose that is true but not a checkpoint (no heading of the schema) does not replace
    history: the guided questions write the checkpoint instead."""
    summarize = _leaking(guided_answer="Plan the museum trip to Lisbon in May.")
    summarize.whole = "The user plans a trip to Lisbon with their sister in May."
    result = asyncio.run(compact(_trip(), window=4_000, count_message=count, summarize=summarize))
    assert summarize.asked > 0
    assert result.ok and result.freeform_refused and result.source == "guided"
    assert summarize.whole not in result.checkpoint
    assert "- Plan the museum trip to Lisbon in May." in result.checkpoint
