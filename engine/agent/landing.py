"""What the loop does with an answer once it has landed: save it (marked where it did not end
on its own), report what it cost and how full the window is, calibrate the counter, and
look for a prompt the engine cut without saying so."""

from __future__ import annotations

import time
from typing import Any

from engine.agent.records import record_usage
from engine.agent.telling import Teller
from engine.agent.texts import (
    answer_cut_text,
    repetition_notice,
    silent_cut_text,
    thinking_cut_text,
    thinking_loop_notice,
)
from engine.agent.types import FINISH_LENGTH, FINISH_REPETITION, Answer, Conversation, Totals
from engine.agent.window import WindowWatch
from engine.config import AgentConfig
from engine.context import ContextManager
from engine.events import (
    NOTICE_ANSWER_CUT,
    NOTICE_REPETITION,
    NOTICE_THINKING_CUT,
    ContextEvent,
    EventSink,
    UsageEvent,
)
from engine.messages import Message, assistant
from engine.providers.base import Provider
from engine.store import Store
from engine.tokens import TokenCounter
from engine.window.output_cap import LIMIT_IGNORED, OutputCap
from engine.window.truncation import CountError, at_window_edge, silently_truncated


class Landing:
    """One conversation's answers as they land, for the agent loop (engine/agent/loop.py)."""

    def __init__(
        self,
        *,
        agent: AgentConfig,
        provider: Provider,
        counter: TokenCounter,
        context: ContextManager,
        conversation: Conversation,
        sink: EventSink,
        tell: Teller,
        watch: WindowWatch,
        count_error: CountError,
        store: Store | None,
        conversation_id: str,
    ) -> None:
        self.agent = agent
        self.provider = provider
        self.counter = counter
        self.context = context
        self.conversation = conversation
        self.sink = sink
        self.tell = tell
        self.watch = watch
        self.count_error = count_error
        self.store = store
        self.conversation_id = conversation_id

    def keep(self, answer: Answer, cap: OutputCap) -> None:
        """Save the answer, and mark one that did not end on its own: cut at its output cap
        (the user can ask for more) or stopped by the repetition guard."""
        # A thinking model's reasoning goes with the message, never into its text.
        message = assistant(answer.text, answer.calls, reasoning=answer.reasoning)
        if answer.reasoning:  # the figures its folded block shows when the conversation reopens
            message = message.with_meta(
                reasoning_tokens=answer.reasoning_tokens,
                reasoning_s=answer.reasoning_s,
                reasoning_estimated=not answer.reasoning_exact,
            )
        if answer.repetition is not None:
            if answer.looped_in_reasoning:
                if answer.text.strip():  # what it answered before it looped is kept
                    self.conversation.append(message.with_meta(stopped=FINISH_REPETITION))
                text, details = thinking_loop_notice(answer.repetition)
                self.tell.mark(NOTICE_REPETITION, text, details, level="warning")
                return
            self.conversation.append(message.with_meta(stopped=FINISH_REPETITION))
            self.tell.mark(
                NOTICE_REPETITION, *repetition_notice(answer.repetition), level="warning"
            )
            return
        if answer.finish_reason != FINISH_LENGTH:
            self.conversation.append(message)
            return
        written = answer.usage.completion_tokens or cap.tokens
        limit = cap.limit if written >= cap.tokens else "engine"
        limit = LIMIT_IGNORED if answer.overran else limit
        window = self.context.budget.window
        if answer.thought_only:  # the cap went on thinking: no empty answer is saved
            self.tell.mark(
                NOTICE_THINKING_CUT,
                thinking_cut_text(cap.tokens, limit, window),
                {
                    "max_tokens": cap.tokens,
                    "completion_tokens": written,
                    "reasoning_tokens": answer.reasoning_tokens,
                    "limit": limit,
                },
                level="warning",
            )
            return
        self.conversation.append(message.with_meta(cut_at=written))
        self.tell.mark(
            NOTICE_ANSWER_CUT,
            answer_cut_text(written, limit, window),
            {"max_tokens": cap.tokens, "completion_tokens": written, "limit": limit},
        )

    def land(
        self,
        request: list[Message],
        counted: int,
        answer: Answer,
        totals: Totals,
        schemas: list[dict[str, Any]],
    ) -> bool:
        """A request landed: report usage and fill, calibrate, and look for a silent cut.
        Returns True when the engine truncated the prompt without saying so."""
        usage = answer.usage
        totals.prompt = usage.prompt_tokens or counted
        totals.cached = usage.cached_tokens
        totals.completion += usage.completion_tokens or 0
        # What the engine evaluated anew: a prefix reused from its cache is not spent twice.
        prompt = usage.prompt_tokens if usage.prompt_tokens is not None else counted
        totals.spent += max(0, prompt - (usage.cached_tokens or 0)) + (usage.completion_tokens or 0)
        totals.last_text = answer.text
        totals.finish = answer.finish_reason
        if usage.eval_s:
            totals.eval_s += usage.eval_s
        elif answer.first_token is not None:
            totals.generating_s += (answer.ended or time.monotonic()) - answer.first_token
        self.sink(
            UsageEvent(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
                counted=counted,
                counted_exact=self.counter.estimate_is_exact,
            )
        )
        used = usage.prompt_tokens if usage.prompt_tokens is not None else counted
        window = self.context.budget.window
        self.sink(
            ContextEvent(
                used=used,
                window=window,
                percent=round(100.0 * used / window, 1) if window else 0.0,
                source=self.watch.window.source,
                estimated=usage.prompt_tokens is None,
            )
        )
        record_usage(
            self.store,
            self.conversation_id,
            agent=self.agent.name,
            provider=self.provider.kind,
            model=self.agent.model,
            usage=usage,
        )
        reported = usage.prompt_tokens
        if reported is None:
            return False
        # An engine that may cut a prompt silently is checked; the others reject it.
        if self.provider.cuts_prompts_silently:
            if silently_truncated(counted, reported, window=window, error=self.count_error):
                own_window = self.watch.window.source == "server"
                self.tell.notice(silent_cut_text(counted, reported, window, own_window), "warning")
                # What it kept is about what it holds: a lesson even without /api/ps. And
                # the model may have been reloaded smaller: the next answer reads /api/ps.
                self.watch.truncated(reported, counted)
                return True
            if at_window_edge(reported, window):
                return False  # a full window or a cut one: nothing safe to learn from
        self.count_error.observe(counted, reported)
        self.counter.calibrate(request, schemas, reported)
        return False
