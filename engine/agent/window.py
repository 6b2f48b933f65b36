"""The agent loop's window as the engine reveals it: learned, checked, and dropped again.

The loop accounts against one window (thresholds, tail, header). Engines reveal more as
they run (engine/window/learning.py): Ollama's /api/ps after every answer (a reload between
two requests is told with its cause, engine/window/reloads.py), an overflow error, a silent
cut. A lesson from an engine's report is applied at once. One drawn from an
error is checked first (engine/window/vetting.py): against the fixed prefix, Brim's own
count of the rejected request and what the engine reports when asked again; a doubted one
is told and not applied. One that passes stays provisional, and a later request larger than
it that the engine answered drops it, back to the window in force before it. Each step is
told as a notice whose figures travel with it (kind and details), not only in prose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.config import AgentConfig
from engine.context import ContextManager
from engine.events import (
    NOTICE_ANSWER_ROOM,
    NOTICE_MODEL_RELOADED,
    NOTICE_PIN_LOWERED,
    NOTICE_PIN_NOT_HONOURED,
    NOTICE_SPILL_CHOICE,
    NOTICE_SPILLED,
    NOTICE_WINDOW_DOUBTED,
    NOTICE_WINDOW_DROPPED,
    NOTICE_WINDOW_LEARNED,
    Event,
    WindowEvent,
    WindowLearnedEvent,
)
from engine.messages import Message
from engine.providers.base import EngineNotice, LoadedModel, Provider
from engine.providers.errors import ContextOverflow
from engine.window.fit_policy import SpillAct, choice_text, lowered_text, spill_act
from engine.window.learning import (
    ENGINE_NAMES,
    WindowLesson,
    apply,
    from_loaded,
    from_overflow,
    from_truncation,
    learned_text,
)
from engine.window.output_cap import room_after_refusal
from engine.window.pin_check import PinRefused, ollama_refusal, refusal_details, refusal_text
from engine.window.reloads import reload_seen, reload_text
from engine.window.resolution import WindowResolution
from engine.window.vetting import (
    PROVISIONAL_CAUSES,
    against_report,
    contradicted,
    doubt_overflow,
    doubt_text,
    report_lesson,
)

log = logging.getLogger(__name__)

Mark = Callable[..., None]  # (kind, text, details, level=...) -> a notice with its figures


class WindowWatch:
    def __init__(
        self,
        *,
        window: WindowResolution,
        agent: AgentConfig,
        provider: Provider,
        context: ContextManager,
        sink: Callable[[Event], None],
        mark: Mark,
        conversation_id: str = "",
        on_window: Callable[[WindowResolution], None] | None = None,
    ) -> None:
        self.window = window
        self.agent = agent
        self.provider = provider
        self.context = context
        self.sink = sink
        self.mark = mark
        self.conversation_id = conversation_id
        self.on_window = on_window
        # The model as the engine last said it holds it loaded (Ollama's /api/ps): read before
        # the loop's first request and after every answer, so a reload between two is seen.
        self._loaded: LoadedModel | None = None
        self._loaded_read = False
        # The window in force before a lesson drawn from an error, and that lesson.
        self._provisional: tuple[WindowResolution, WindowLesson] | None = None
        # The pin refusals told (asked, allocated), and the last spill read ("": none; None:
        # not read yet), so each is told once.
        self._refusals: set[tuple[int, int]] = set()
        self._spill_read: str | None = None
        self._spill_cpu = 0  # the share of the model on the CPU at the last spill read

    @property
    def engine(self) -> str:
        return ENGINE_NAMES.get(self.window.provider, self.window.provider or "The engine")

    # -- what the engine reveals -------------------------------------------------------------

    async def before_request(self) -> None:
        """Before the loop's first request: how the model is loaded, the reading a reload
        after the first answer is told against."""
        if not self._loaded_read:
            self._loaded_read = True
            self._loaded = await self._read_loaded()
            await self.start_spill()

    async def after_answer(self, *, load_s: float | None, sent_at: float) -> None:
        """After every answer: the window the model runs with now (an unpinned agent learns
        Ollama's own choice; a smaller one is served), and a reload since the previous
        request, told once with its cause. `load_s` is how long the engine waited before it
        answered (Ollama's `load_duration`), `sent_at` when the request went out."""
        self._loaded_read = True
        before, now = self._loaded, await self._read_loaded()
        self._loaded = now
        lesson = from_loaded(self.window, now.window if now is not None else None)
        reload = reload_seen(before, now, load_s=load_s, sent_at=sent_at)
        if reload is None:
            refused = self._refused(now)
            self.learn(lesson, told=refused is None)
            if refused is not None:
                self._tell_refusal(refused)
            if self._spill_read is None or before is None or _moved(before, now):
                await self._read_spill()  # after a load: where the model sits now
            return
        pinned = self.window.pinned
        if pinned is None or reload.load_s is not None:
            # A pinned agent's next request loads its pin back: another client's window
            # is not the one Brim's requests run with.
            self.learn(lesson, told=False)
        self.mark(
            NOTICE_MODEL_RELOADED,
            reload_text(
                self.agent.model,
                reload,
                pinned=pinned,
                compacts_at=self.context.budget.compact_threshold,
            ),
            {
                "cause": reload.cause,
                "model": self.agent.model,
                "window": reload.new or 0,
                "old": reload.old or 0,
                "load_ms": round(1000 * reload.load_s) if reload.load_s is not None else 0,
                "compacts_at": self.context.budget.compact_threshold,
            },
            level="warning" if reload.window_changed else "info",
        )
        await self._read_spill()

    # -- the pin: honoured, or refused; on the GPU, or spilled ------------------------------

    def _refused(self, now: LoadedModel | None) -> PinRefused | None:
        """The engine loaded the model with less than the pin its requests carry."""
        pinned = self.window.pinned
        if pinned is None or now is None:
            return None
        refused = ollama_refusal(pinned, now.window, model_max=self.window.model_max)
        if refused is None or (refused.asked, refused.allocated) in self._refusals:
            return None
        return refused

    def _tell_refusal(self, refused: PinRefused) -> None:
        self._refusals.add((refused.asked, refused.allocated))
        engine, model = self.window.provider, self.agent.model
        compacts_at = self.context.budget.compact_threshold
        self.mark(
            NOTICE_PIN_NOT_HONOURED,
            refusal_text(refused, engine=engine, model=model, compacts_at=compacts_at),
            refusal_details(refused, engine=engine, model=model),
            level="warning",
        )

    async def start_spill(self) -> None:
        """Before the first request: the fit policy on a spill the start's report told."""
        if self._spill_read is not None:
            return
        self._spill_read = ""
        for found in self.window.notices:
            if found.kind == NOTICE_SPILLED:
                self._spill_read = found.text
                self._on_spill(found, told=True)

    async def _read_spill(self) -> None:
        """After a load: the share of the model off the GPU, told once per reading, and the
        agent's fit policy applied to it (on_spill)."""
        try:
            found = await self.provider.gpu_spill(self.agent.model)
        except Exception:  # a status read must never fail the turn that already answered
            log.warning("could not read where the model is loaded", exc_info=True)
            return
        text = found.text if found is not None else ""
        if found is None or text == self._spill_read:
            self._spill_read = text
            return
        self._spill_read = text
        told = any(n.text == text for n in self.window.notices)
        self._on_spill(found, told=told)

    def _on_spill(self, found: EngineNotice, *, told: bool) -> None:
        if not told:
            self.mark(found.kind, found.text, dict(found.details), level="warning")
        act = spill_act(self.agent.on_spill, self.window.pinned, found.details)
        if act.action == "ask":
            self.mark(
                NOTICE_SPILL_CHOICE,
                choice_text(self.agent.model, act),
                {
                    "asked": act.asked or 0,
                    "fits": act.fits or 0,
                    "cpu_percent": act.cpu_percent,
                    "choices": "keep,shrink",
                },
                level="warning",
            )
        self._spill_cpu = act.cpu_percent
        if act.action == "shrink" and act.fits is not None:
            self.lower_pin(act.fits)

    def lower_pin(self, fits: int, *, chosen: bool = False) -> bool:
        """The pin lowered to `fits` (on_spill = shrink, or `chosen` by the user from an ask's
        choice): the engine asks for it from the next request on and Brim accounts against it.
        False where there is no larger pin to lower or the engine takes no pin."""
        old, cpu_percent = self.window, self._spill_cpu
        if old.pinned is None or fits >= old.pinned or not self.provider.set_pin(fits):
            return False
        window = min(fits, old.ceiling) if old.ceiling is not None else fits
        self.window = replace(old, window=window, source="pinned", pinned=fits)
        self.context.set_window(window)
        compacts_at = self.context.budget.compact_threshold
        self.sink(
            WindowLearnedEvent(
                engine=old.provider,
                model=old.model,
                old=old.window,
                new=window,
                source="pinned",
                cause="spill_shrink",
                compacts_at=compacts_at,
            )
        )
        self._tell_window(window, "pinned")
        act = SpillAct("shrink", old.pinned, fits, cpu_percent)
        self.mark(
            NOTICE_PIN_LOWERED,
            lowered_text(self.agent.model, act, compacts_at=compacts_at, chosen=chosen),
            {
                "asked": old.pinned,
                "lowered_to": fits,
                "cpu_percent": cpu_percent,
                "compacts_at": compacts_at,
                "by": "user" if chosen else "on_spill",
            },
            level="warning",
        )
        return True

    async def _read_loaded(self) -> LoadedModel | None:
        try:
            return await self.provider.loaded_model(self.agent.model)
        except Exception:  # a status read must never fail the turn that already answered
            log.warning("could not read how the model is loaded", exc_info=True)
            return None

    async def overflow(
        self, exc: ContextOverflow, *, sent: int, needed: int, tolerance: float
    ) -> None:
        """An overflow error: what it implies about the window, once checked."""
        lesson = from_overflow(self.window, exc, sent=sent, engine=self.provider.kind)
        doubt = doubt_overflow(
            lesson,
            exc,
            sent=sent,
            needed=needed,
            tolerance=tolerance,
            fixed_tokens=self.context.budget.fixed_tokens,
        )
        if doubt is None and lesson is not None:
            rejected = exc.prompt_tokens if exc.prompt_tokens else sent
            lesson, doubt = against_report(
                lesson, await self._reported(), current=self.window.window, rejected=rejected
            )
        elif doubt is not None:
            # Not believed; the engine's own report may still say something smaller.
            lesson = report_lesson(await self._reported(), current=self.window.window)
        if doubt is not None:
            self.mark(
                NOTICE_WINDOW_DOUBTED,
                doubt_text(self.engine, doubt, self.window.window),
                {
                    "window": doubt.figure,
                    "source": "overflow_error",
                    "cause": doubt.cause,
                    "reason": doubt.reason,
                    "evidence": doubt.evidence or 0,
                    "kept": self.window.window,
                },
                level="warning",
            )
        self.learn(lesson, sent=sent)

    async def room_left(
        self,
        exc: ContextOverflow,
        refused: int,
        request: list[Message],
        tools: list[dict[str, Any]],
        *,
        sent: int,
        tolerance: float,
    ) -> int | None:
        """A refusal of prompt + `refused` tokens of answer room (vLLM, SGLang) where the
        prompt alone fits: the max_tokens to send the same request with, told once and with
        what the refusal says about the window learned. None where the prompt must shrink
        (the ladder's business). Where the engine named only a floor for the prompt (vLLM
        now), its own count of the request is asked, if it can count."""
        prompt = None
        if exc.prompt_floor is not None and exc.output_tokens:
            prompt = await self.provider.count_prompt(self.agent.model, request, tools)
        room = room_after_refusal(exc, refused, prompt)
        if room is None or exc.window is None:
            return None
        await self.overflow(exc, sent=sent, needed=sent + refused, tolerance=tolerance)
        engine_count = exc.window - room - 1
        self.mark(
            NOTICE_ANSWER_ROOM,
            f"{self.engine} counts this request at {engine_count:,} tokens (Brim counted "
            f"{sent:,}), so {refused:,} more for the answer would pass its {exc.window:,}-token "
            f"window: the answer gets the {room:,} tokens left, and nothing is compacted.",
            {
                "max_tokens": room,
                "refused": refused,
                "prompt_tokens": engine_count,
                "counted": sent,
                "window": exc.window,
            },
        )
        return room

    def truncated(self, reported: int, sent: int) -> None:
        """Ollama cut a prompt silently: what it kept is about what it holds."""
        self.learn(from_truncation(self.window, reported), sent=sent)

    def answered(self, prompt_tokens: int) -> None:
        """A request of `prompt_tokens` (the engine's count where it gave one) was answered
        whole: a provisional window smaller than that was wrong, and is dropped."""
        if self._provisional is None:
            return
        before, lesson = self._provisional
        if not contradicted(lesson, prompt_tokens) or self.window.window != lesson.window:
            return
        self._provisional = None
        self.window = before
        self.context.set_window(before.window)
        self.mark(
            NOTICE_WINDOW_DROPPED,
            f"{self.engine} answered a request of {prompt_tokens:,} tokens, more than the "
            f"{lesson.window:,}-token window Brim had drawn from its {_said(lesson)}; Brim "
            f"accounts against {before.window:,} again and compacts at "
            f"{self.context.budget.compact_threshold:,}.",
            {
                "window": lesson.window,
                "cause": lesson.cause,
                "answered": prompt_tokens,
                "restored": before.window,
                "source": before.source,
            },
        )
        self._tell_window(before.window, before.source)

    # -- applying a lesson ----------------------------------------------------------------

    def learn(self, lesson: WindowLesson | None, *, sent: int = 0, told: bool = True) -> None:
        """Account against the window the engine revealed from now on: thresholds, tail and
        header follow it, and the transcript says so once, with its figure and source
        (`told` False: the caller tells it, in its own notice)."""
        if lesson is None:
            return
        old = self.window
        if old.ceiling is not None and lesson.window > old.ceiling:
            return  # max_context_tokens only ever lowers the window
        if lesson.cause in PROVISIONAL_CAUSES:
            if self._provisional is None:
                self._provisional = (old, lesson)
            else:
                self._provisional = (self._provisional[0], lesson)
        else:
            self._provisional = None  # the engine's own report settles it
        self.window = apply(old, lesson)
        self.context.set_window(lesson.window)
        compacts_at = self.context.budget.compact_threshold
        self.sink(
            WindowLearnedEvent(
                engine=old.provider,
                model=old.model,
                old=old.window,
                new=lesson.window,
                source=lesson.source,
                cause=lesson.cause,
                compacts_at=compacts_at,
            )
        )
        self._tell_window(lesson.window, lesson.source)
        if not told:
            return
        self.mark(
            NOTICE_WINDOW_LEARNED,
            learned_text(old, lesson, compacts_at=compacts_at, sent=sent),
            {
                "window": lesson.window,
                "old": old.window,
                "source": lesson.source,
                "cause": lesson.cause,
                "compacts_at": compacts_at,
            },
        )

    def _tell_window(self, window: int, source: str) -> None:
        self.sink(
            WindowEvent(
                window=window, source=source, warnings=[], conversation=self.conversation_id
            )
        )
        if self.on_window is not None:
            self.on_window(self.window)

    async def _reported(self) -> int | None:
        """The window the engine reports now (None when it says none or cannot be asked)."""
        try:  # the pin is the provider's own (given at build): nothing to hand it again
            report: Any = await self.provider.report(self.agent.model)
        except Exception:  # asking again must never fail the turn
            log.info("could not ask the engine for its window again", exc_info=True)
            return None
        return report.served if isinstance(report.served, int) else None


def _moved(before: LoadedModel, now: LoadedModel | None) -> bool:
    """The model was loaded anew between two readings (another window, or unloaded)."""
    return now is None or before.window != now.window


def _said(lesson: WindowLesson) -> str:
    return {
        "overflow": "overflow error",
        "rejected_below_report": "rejection",
        "truncation": "silent cut",
    }.get(lesson.cause, "error")
