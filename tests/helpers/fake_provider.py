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
"""

from __future__ import annotations

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
from engine.providers.errors import ContextOverflow
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

    def __init__(self, *, window: int = 4096) -> None:
        super().__init__("http://in-process")
        self.window = window
        self.requests: list[Request] = []
        self.responder: Callable[[Request], Answer] = lambda _request: Answer()
        self._script: list[Answer] = []
        self._cache: list[int] = []

    def script(self, text: str = "Done.", *, tool_calls: list[ToolCall] | None = None) -> None:
        self._script.append(Answer(text=text, tool_calls=list(tool_calls or [])))

    @property
    def answered(self) -> list[Request]:
        return [r for r in self.requests if not r.rejected]

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id="fake-model", served_window=self.window)]

    async def report(self, model: str) -> EngineReport:
        return EngineReport(
            provider=self.kind,
            model=model,
            window_rule="slot",
            served=self.window,
            slots=1,
            tool_calls=True,
        )

    def segment_tokenizer(self, model: str) -> FakeTemplateTokenizer:
        """The engine's own count of each message under its template (what `/tokenize` of
        the message as `/apply-template` frames it says); no BOS, as this engine adds none."""
        return FakeTemplateTokenizer(bos=False)

    def counting_source(self, model: str) -> str:
        return "the in-process engine's tokenizer"

    def counting_note(self, model: str) -> str:
        return "exact: counted by the in-process engine"

    def _tokens(self, messages: list[Message], tools: list[dict[str, Any]]) -> list[int]:
        return tokenize(render_chat([to_openai(m) for m in messages], tools or None))

    async def count_prompt(
        self, model: str, messages: list[Message], tools: list[dict[str, Any]]
    ) -> int | None:
        return len(self._tokens(messages, tools))

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
        for piece in split_reply(answer.text):
            yield TextDelta(piece)
        if answer.tool_calls:
            yield ToolCallsReady(tuple(answer.tool_calls))
        finish = answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")
        usage = Usage(
            prompt_tokens=len(tokens),
            completion_tokens=count_text(answer.text),
            cached_tokens=cached,
        )
        yield StreamDone(usage=usage, finish_reason=finish)
