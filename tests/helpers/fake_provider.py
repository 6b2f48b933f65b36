"""An in-process engine for loop and ladder tests: the `Provider` interface with no HTTP.

The loopback fakes (`fake_engines`) test each protocol as it goes over the wire; this one
tests what Brim does with the answers, without a server thread, a socket or a stream parser
in the way. It is as hard as the engines where the loop and the ladder care:

- it counts every request with the same content-sensitive BPE as the loopback fakes
  (`fake_tokenizer`: digits and JSON cost more per character than prose), and tells Brim
  the same counts through `segment_tokenizer`, as llama-server does through `/tokenize`;
- it reports one window (`/props` says `window`) and rejects a prompt above it, with
  llama-server's overflow message;
- it reuses its cache as a prefix cache does: `cached_tokens` is the prompt's common token
  prefix with the request before it.

    engine = InProcessEngine(window=4096)
    engine.script("Hello.")                                   # the next answer
    engine.script(tool_calls=[ToolCall("c1", "read_file", {"path": "a.txt"})])
    engine.responder = lambda request: Answer(text="...")     # when the script is empty
    session = ChatSession(agent, paths, sink, provider=engine)
    engine.requests[0].messages, engine.requests[0].prompt_tokens

An answer can also be streamed as the engines stream theirs when something is slow or goes
wrong, each a condition the session meets with a real engine:

    engine.script(deltas=["The", " answer"])          # exactly these pieces
    engine.script("Working", hold=True)               # then nothing, until Brim cancels it
    engine.script("Slow.", delay_s=0.01)              # a pause before each piece
    engine.script("", error=EngineUnreachable("..."))  # the engine fails mid-answer
    engine.script("Cut", finish_reason="length")      # the engine stopped at its cap
    engine.script("Hi", prompt_tokens=6000)           # usage as the engine reports it

An engine made with `counts=False` cannot count a prompt (Brim estimates); the start can be
slow or fail: `ready_after_s` (llama-server's /health says 503 that
long), `load_s` with `load_progress` (a model loaded in Brim's process, told through
`on_load_progress` as the embedded engine tells it), `report_error` (the engine cannot be
reached), `warnings` (what the engine's report warns of).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from engine.messages import Message, ToolCall, to_openai
from engine.providers.base import (
    ChatOptions,
    EngineReport,
    ModelInfo,
    Provider,
    StreamDone,
    StreamItem,
    TextDelta,
    ToolCallsReady,
    Usage,
)
from engine.providers.errors import ContextOverflow, ProviderError
from tests.helpers import fake_tokenizer
from tests.helpers.exact_counter import FakeTemplateTokenizer
from tests.helpers.fake_tokenizer import (
    common_prefix,
    count_text,
    render_chat,
    split_reply,
    tokenize,
)


@dataclass
class Answer:
    text: str = "Done."
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None  # None: "tool_calls" with tool calls, else "stop"
    deltas: list[str] | None = None  # the text streamed as these pieces (None: word by word)
    delay_s: float = 0.0  # a pause before each piece, as a slow model makes
    hold: bool = False  # after the pieces, nothing more until the request is cancelled
    error: ProviderError | None = None  # raised after the pieces, in place of the stream's end
    # What the engine's usage says instead of its own counts (None: the engine counts).
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None

    @property
    def pieces(self) -> list[str]:
        return list(self.deltas) if self.deltas is not None else split_reply(self.text)

    @property
    def said(self) -> str:
        return "".join(self.deltas) if self.deltas is not None else self.text


@dataclass
class Request:
    """One chat request as it reached the engine."""

    messages: list[Message]
    options: ChatOptions
    prompt_tokens: int
    cached_tokens: int
    rejected: bool = False

    @property
    def roles(self) -> list[str]:
        return [m.role for m in self.messages]


class InProcessEngine(Provider):
    """A llama-server-like engine in the test's own process."""

    kind = "llamacpp"

    def __init__(
        self,
        *,
        window: int = 4096,
        warnings: list[str] | None = None,
        ready_after_s: float = 0.0,
        load_s: float = 0.0,
        load_progress: list[float] | None = None,
        loads_model_in_process: bool = False,
        report_error: ProviderError | None = None,
        counts: bool = True,
    ) -> None:
        super().__init__("http://in-process")
        self.window = window
        self.warnings = list(warnings or [])
        self.ready_after_s = ready_after_s
        self.load_s = load_s
        self.load_progress = list(load_progress or [])
        if loads_model_in_process:  # else the class's (a subclass may say True)
            self.loads_model_in_process = True
        self.on_load_progress: Callable[[float], None] | None = None
        self.report_error = report_error
        self.counts = counts  # False: an engine that cannot count a prompt (Brim estimates)
        self.requests: list[Request] = []
        self.cancelled = 0  # answers cancelled while they streamed (or held)
        self.responder: Callable[[Request], Answer] = lambda _request: Answer()
        self._script: list[Answer] = []
        self._cache: list[int] = []
        self._first_asked: float | None = None

    def script(
        self,
        text: str = "Done.",
        *,
        tool_calls: list[ToolCall] | None = None,
        deltas: list[str] | None = None,
        delay_s: float = 0.0,
        hold: bool = False,
        error: ProviderError | None = None,
        finish_reason: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cached_tokens: int | None = None,
    ) -> None:
        self._script.append(
            Answer(
                text=text,
                tool_calls=list(tool_calls or []),
                finish_reason=finish_reason,
                deltas=deltas,
                delay_s=delay_s,
                hold=hold,
                error=error,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cached_tokens=cached_tokens,
            )
        )

    @property
    def pending(self) -> int:
        """Scripted answers not asked for yet."""
        return len(self._script)

    async def ready(self) -> bool:
        """False for `ready_after_s` after the first question, as llama-server's /health
        answers 503 while it loads its model."""
        now = time.monotonic()
        if self._first_asked is None:
            self._first_asked = now
        return now - self._first_asked >= self.ready_after_s

    @property
    def answered(self) -> list[Request]:
        return [r for r in self.requests if not r.rejected]

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id="fake-model", served_window=self.window)]

    async def report(self, model: str) -> EngineReport:
        if self.report_error is not None:
            raise self.report_error
        await self._load()
        return EngineReport(
            provider=self.kind,
            model=model,
            window_rule="slot",
            served=self.window,
            slots=1,
            tool_calls=True,
            warnings=list(self.warnings),
        )

    async def _load(self) -> None:
        """The model's load: `load_s` long, telling each of `load_progress` on the way."""
        steps = self.load_progress or [1.0]
        for fraction in steps:
            await asyncio.sleep(self.load_s / len(steps))
            if self.load_progress and self.on_load_progress is not None:
                self.on_load_progress(fraction)

    def segment_tokenizer(self, model: str) -> FakeTemplateTokenizer | None:
        """The engine's own count of each message under its template (what `/tokenize` of
        the message as `/apply-template` frames it says); no BOS, as this engine adds none."""
        return FakeTemplateTokenizer(bos=False, vocab=fake_tokenizer) if self.counts else None

    def counting_source(self, model: str) -> str:
        return "the in-process engine's tokenizer"

    def counting_note(self, model: str) -> str:
        return "exact: counted by the in-process engine"

    def _tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[int]:
        return tokenize(render_chat([to_openai(m) for m in messages], tools or None))

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        return len(self._tokens(messages, tools)) if self.counts else None

    async def stream_chat(  # type: ignore[override]
        self, model: str, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[StreamItem]:
        tokens = self._tokens(messages, list(options.tools))
        cached = common_prefix(tokens, self._cache)
        request = Request(list(messages), options, len(tokens), cached)
        self.requests.append(request)
        limit = self.window
        if len(tokens) > limit:  # llama-server weighs the prompt alone against n_ctx
            request.rejected = True
            raise ContextOverflow(
                f"the request exceeds the available context size ({len(tokens)} tokens, "
                f"n_ctx {limit})",
                status=400,
                prompt_tokens=len(tokens),
                window=limit,
            )
        self._cache = tokens
        answer = self._script.pop(0) if self._script else self.responder(request)
        try:
            for piece in answer.pieces:
                if answer.delay_s:
                    await asyncio.sleep(answer.delay_s)
                yield TextDelta(piece)
            if answer.hold:
                await asyncio.Event().wait()  # until the task reading the stream is cancelled
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled += 1
            raise
        if answer.error is not None:
            raise answer.error
        if answer.tool_calls:
            yield ToolCallsReady(tuple(answer.tool_calls))
        finish = answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")
        usage = Usage(
            prompt_tokens=_given(answer.prompt_tokens, len(tokens)),
            completion_tokens=_given(answer.completion_tokens, count_text(answer.said)),
            cached_tokens=_given(answer.cached_tokens, cached),
        )
        yield StreamDone(usage=usage, finish_reason=finish)


def _given(scripted: int | None, counted: int) -> int:
    return counted if scripted is None else scripted
