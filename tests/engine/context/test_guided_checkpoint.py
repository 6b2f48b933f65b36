"""A refused free-form summary falls back to one short question per section."""

from __future__ import annotations

import asyncio

from engine.context.compaction import SummaryRequest, SummaryResult, summary_refusal
from engine.context.guided import GUIDED_QUESTIONS, guided_checkpoint
from engine.providers.embedded_child import StopText


def _answering(answers: dict[str, SummaryResult]):
    asked: list[SummaryRequest] = []

    async def summarize(request: SummaryRequest) -> SummaryResult:
        asked.append(request)
        question = request.messages[-1].content
        for key, result in answers.items():
            if key in question:
                return result
        return SummaryResult("none", "stop")

    return summarize, asked


def test_complete_answers_become_sections_and_cut_off_ones_are_dropped():
    summarize, asked = _answering(
        {
            "trying to get done": SummaryResult("Answer: Migrate the auth routes.", "stop"),
            "should happen next": SummaryResult("Fix the token refresh and then", "length"),
        }
    )
    checkpoint = asyncio.run(guided_checkpoint("TRANSCRIPT", summarize))
    assert checkpoint is not None
    assert "## Goal\n- Migrate the auth routes." in checkpoint
    assert "Fix the token refresh" not in checkpoint
    assert len(asked) == len(GUIDED_QUESTIONS)
    assert all(r.stop == ("\n\n",) and r.max_tokens <= 96 for r in asked)


def test_no_usable_answer_means_no_checkpoint():
    summarize, _ = _answering({"": SummaryResult("", "length")})
    assert asyncio.run(guided_checkpoint("TRANSCRIPT", summarize)) is None


def test_a_summary_that_echoes_the_transcript_is_refused():
    echo = SummaryResult("<<<TRANSCRIPT ab12>>>\n[user]\nhello", "stop")
    assert summary_refusal(echo) is not None
    assert summary_refusal(SummaryResult("## Goal\n- ship it", "stop")) is None


def test_a_stop_string_split_across_tokens_ends_generation_without_showing_it():
    stops = StopText(["\n\n"])
    shown = []
    for piece in ["Done", ".", "\n", "\nmore"]:
        text, stopped = stops.feed(piece)
        shown.append(text)
        if stopped:
            break
    assert "".join(shown) == "Done." and stopped


def test_after_one_refused_checkpoint_later_compactions_go_straight_to_the_questions():
    from engine.context import ContextManager
    from engine.context.guided import GUIDED_SYSTEM
    from engine.messages import assistant, system, user

    freeform: list[SummaryRequest] = []

    async def summarize(request: SummaryRequest) -> SummaryResult:
        if request.messages[0].content == GUIDED_SYSTEM:
            return SummaryResult("Keep the notes in order.", "stop")
        freeform.append(request)
        return SummaryResult("rambling " * 50, "length")

    def history(n: int) -> list:
        msgs = [system("You help.")]
        for i in range(n):
            msgs += [user(f"note {i} " + "word " * 400), assistant(f"ok {i}")]
        return msgs

    manager = ContextManager(
        window=8000, count_message=lambda m: len(m.content) // 4 + 4, summarize=summarize
    )
    first = asyncio.run(manager.compact(history(12)))
    second = asyncio.run(manager.compact([*first.history, *history(12)[1:]]))
    assert first.compaction is not None and first.compaction.ok and first.compaction.guided
    assert second.compaction is not None and second.compaction.ok
    assert len(freeform) == 1
