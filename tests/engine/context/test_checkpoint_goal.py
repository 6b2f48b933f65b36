"""Every checkpoint keeps the task: a Goal from the summarizer, an earlier checkpoint, or the
user's own first request; and the model speaking as the assistant is never a section."""

from __future__ import annotations

import asyncio

from engine.context.checkpoint import checkpoint_entries, stored_checkpoint
from engine.context.compaction import compact
from engine.context.guided import guided_checkpoint
from engine.messages import Message, assistant, system, user

from .histories import count, guided_answers, summaries, text

WINDOW = 8_000
# What SmolLM2 answered a guided question on a clean clone's run of the long embedded test.
APOLOGY = (
    "I'm sorry for any misunderstanding, but as a server builder and developer, I specialize "
    "in building servers and writing logs."
)
FIRST_REQUEST = "Note 0: build server 0 runs job alpha-0 every 3 minutes."


def _notes_run(turns: int = 14) -> list[Message]:
    msgs = [system("You are Brim.")]
    for i in range(turns):
        note = f"Note {i}: build server {i} runs job alpha-{i} every {i + 3} minutes."
        msgs += [user(note + " " + text(1_200, "padding")), assistant(text(1_200, "noted"))]
    return msgs


def test_a_guided_answer_that_apologises_as_the_assistant_is_dropped():
    reference = APOLOGY + " " + FIRST_REQUEST
    summarize = guided_answers(
        {"trying to get done": "Build server 0 runs job alpha-0.", "preferences": APOLOGY}
    )
    checkpoint = asyncio.run(guided_checkpoint("TRANSCRIPT", summarize, reference=reference))
    assert checkpoint is not None
    entries = checkpoint_entries(checkpoint)
    assert "Constraints & Preferences" not in entries
    assert "sorry" not in checkpoint


def test_a_checkpoint_without_a_goal_from_the_model_quotes_the_users_first_request():
    msgs = _notes_run()
    summarize = guided_answers(
        {
            "should happen next": "Build server 3 runs job alpha-3 next.",
            "exact names": "alpha-0, alpha-3, build server 3.",
        }
    )
    result = asyncio.run(compact(msgs, window=WINDOW, count_message=count, summarize=summarize))
    assert result.ok
    (summary,) = summaries(result.messages)
    goal = checkpoint_entries(stored_checkpoint(summary))["Goal"]
    assert len(goal) == 1 and FIRST_REQUEST in goal[0]
    assert len(goal[0]) < 300  # the request is cut, not pasted whole
    # The model is told it as the user's own words.
    assert f"\u201c{FIRST_REQUEST}" in summary.content


def test_the_models_own_goal_is_kept_and_no_request_is_quoted_beside_it():
    msgs = _notes_run()
    summarize = guided_answers({"trying to get done": "Keep notes about build server 0 jobs."})
    result = asyncio.run(compact(msgs, window=WINDOW, count_message=count, summarize=summarize))
    (summary,) = summaries(result.messages)
    goal = checkpoint_entries(stored_checkpoint(summary))["Goal"]
    assert goal == ["Keep notes about build server 0 jobs."]


def test_a_statement_the_checkpoint_already_quotes_is_not_quoted_again_in_the_goal():
    msgs = _notes_run()
    msgs[1] = user("I keep every build log for 30 days. " + msgs[1].content)
    summarize = guided_answers({})  # nothing usable: the checkpoint is Brim's own
    result = asyncio.run(compact(msgs, window=WINDOW, count_message=count, summarize=summarize))
    (summary,) = summaries(result.messages)
    assert summary.content.count("I keep every build log for 30 days.") == 1
    goal = checkpoint_entries(stored_checkpoint(summary))["Goal"]
    assert FIRST_REQUEST in goal[0] and "30 days" not in goal[0]
