"""The guided checkpoint: how a small local model still writes a usable summary.

A model of a few hundred million parameters rarely writes the whole checkpoint schema in
one answer: it echoes the transcript or runs to its output limit, and that summary is
refused. Such a model can still answer one short question about a transcript. So when the
free-form checkpoint is refused, compaction asks the summarizer one question per section
(each answer ends at a blank line and must be complete: an answer cut off at its limit is
dropped, never used), and Brim builds the checkpoint around the answers. Covered So Far is
filled mechanically from the transcript's own tool calls, as it is for any checkpoint.

Every answer passes the same checks as a free-form checkpoint
(engine/context/summary_checks.py): a looped phrase, words from nowhere in the
conversation, another language or the prompt's own scaffolding drop that answer. A small
model's first answer was once "Bimbaisiliega: Não deve mós, não deve mós, …", accepted as the
Goal, and the agent answered every later question with it. Then each sentence of an answer
is held to the conversation (engine/context/grounding.py): one the conversation does not
support is left out, and the rest of the answer kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from engine.context.checkpoint import parse_checkpoint, render_checkpoint
from engine.context.grounding import Ground, grounded_text
from engine.context.summarizer import (
    GUIDED_SYSTEM,
    Summarize,
    SummaryRequest,
    is_compaction_request,
)
from engine.context.summary_checks import (
    assistant_voice_reason,
    echo_reason,
    scaffold_reason,
    unusable_reason,
)
from engine.messages import Message
from engine.resources import prompt_table

log = logging.getLogger(__name__)

__all__ = [
    "GUIDED_QUESTIONS",
    "GUIDED_SYSTEM",
    "REPLAY_QUESTION",
    "guided_checkpoint",
    "is_compaction_request",
]

# (section, question) in schema order, from resources/prompts/guided_questions.toml. Covered
# So Far and Progress come from the tool calls, not from the model.
GUIDED_QUESTIONS: tuple[tuple[str, str], ...] = tuple(
    (item["section"], item["question"]) for item in prompt_table("guided_questions")["questions"]
)
# Before each question that follows the conversation as it was last sent.
REPLAY_QUESTION: str = prompt_table("guided_questions")["replay_preamble"]

ANSWER_PREFIX = "Answer:"
ANSWER_STOP = ("\n\n",)
ANSWER_MAX_TOKENS = 96
NONE_ANSWERS = frozenset({"none", "none.", "n/a", "nothing", "nothing.", "no", "no."})
# An acknowledgement answers no question: "Noted." is not a goal.
ACKNOWLEDGEMENTS = frozenset(
    {"noted", "ok", "okay", "sure", "understood", "got it", "acknowledged", "yes", "done"}
)


def _clean(answer: str) -> str:
    text = answer.strip()
    if text.lower().startswith(ANSWER_PREFIX.lower()):
        text = text[len(ANSWER_PREFIX) :].strip()
    return " ".join(text.split())


async def guided_checkpoint(
    transcript_prompt: str,
    summarize: Summarize,
    *,
    frame: Callable[[str], list[Message]] | None = None,
    tools: tuple[dict[str, Any], ...] = (),
    reference: str = "",
    ground: Ground | None = None,
) -> str | None:
    """Ask one question per section over `transcript_prompt` (the transcript block with
    its framing, ending where the question goes). None when no answer was usable.

    `frame` instead puts each question after the conversation as it was last sent (with its
    `tools`), so each question reuses the engine's cached prefix. `reference` is the text
    the answers must come from (the conversation and the earlier checkpoint); with `ground`
    each sentence of an answer is held to the conversation, and only the sentences it
    supports are kept (engine/context/grounding.py)."""
    sections: dict[str, list[str]] = {}
    for section, question in GUIDED_QUESTIONS:
        if frame is not None:
            messages = frame(REPLAY_QUESTION + question)
        else:
            messages = [
                Message(role="system", content=GUIDED_SYSTEM),
                Message(role="user", content=f"{transcript_prompt}\n\n{question}"),
            ]
        request = SummaryRequest(
            messages=messages, max_tokens=ANSWER_MAX_TOKENS, stop=ANSWER_STOP, tools=tools
        )
        try:
            result = await summarize(request)
        except Exception:
            log.warning("the summarizer failed on a guided question", exc_info=True)
            return None
        answer = _clean(result.text)
        if result.finish_reason == "length" or not answer:
            continue  # incomplete answers are dropped, never used
        if answer.lower() in NONE_ANSWERS or answer.lower().strip(" .!") in ACKNOWLEDGEMENTS:
            continue
        refusal = (
            scaffold_reason(answer)
            or assistant_voice_reason(answer)
            or echo_reason(answer, question)
            or unusable_reason(answer, reference or transcript_prompt)
        )
        if refusal is not None:
            log.info("a guided answer for %s was refused: %s", section, refusal)
            continue
        if ground is not None:
            answer, refused = grounded_text(answer, ground)
            for why in refused:
                log.info("a guided answer for %s lost a line: %s", section, why)
            if not answer:
                continue
        sections[section] = [f"- {answer}"]
    if "Goal" not in sections and len(sections) < 2:
        return None
    checkpoint = render_checkpoint(sections)
    parse_checkpoint(checkpoint)  # the rendered schema is always parseable
    return checkpoint
