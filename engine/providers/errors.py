"""What can go wrong when Brim talks to an engine.

    ProviderError
     ├── EngineUnreachable     the URL does not answer (refused, DNS, timeout, engine died)
     ├── ModelNotFound         the engine answers but does not have the model
     ├── ContextOverflow       the engine rejected the prompt as longer than its window
     ├── ToolsUnsupported      the engine refused the request because it carried tools
 ├── ThinkingUnsupported   the engine refused to have this model think (it cannot)
     ├── ServerError           the engine failed (HTTP 5xx, an error line mid-stream, a crash)
     │    └── KvPoolFull       llama-server's shared KV pool ran out under the requests in flight
     └── ProtocolError         the engine answered something Brim cannot read

`kind` is the stable name used in the headless `error` event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from engine.events import ErrorKind


class ProviderError(Exception):
    kind: ClassVar[ErrorKind] = "provider_error"
    retryable = True

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class EngineUnreachable(ProviderError):
    kind: ClassVar[ErrorKind] = "unreachable"


class ModelNotFound(ProviderError):
    kind: ClassVar[ErrorKind] = "model_not_found"


class ContextOverflow(ProviderError):
    kind: ClassVar[ErrorKind] = "context_overflow"
    retryable = False  # reported once compaction could not make room: the same would fail

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        prompt_tokens: int | None = None,
        window: int | None = None,
        output_tokens: int | None = None,
        prompt_floor: int | None = None,
    ) -> None:
        """`prompt_tokens` and `window` as the engine stated them; `output_tokens` the answer's
        room (max_tokens) it weighed with the prompt, where it said so; `prompt_floor` a size
        the prompt is at least, where the engine stopped counting there (current vLLM stops
        one token past what would fit, so it never says how long the prompt is)."""
        super().__init__(message, status=status)
        self.prompt_tokens = prompt_tokens
        self.window = window
        self.output_tokens = output_tokens
        self.prompt_floor = prompt_floor


class ToolsUnsupported(ProviderError):
    """The engine will not take tools for this model as it runs now; `hint` says how to
    change that (a server flag, another model)."""

    kind: ClassVar[ErrorKind] = "tools_unsupported"
    retryable = False

    def __init__(self, message: str, *, hint: str, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.hint = hint


class ThinkingUnsupported(ProviderError):
    """The request asked a model that cannot think to think (Ollama's 400 "does not support
    thinking"): the agent's reasoning level asks what the model cannot do."""

    kind: ClassVar[ErrorKind] = "thinking_unsupported"
    retryable = False


class ServerError(ProviderError):
    kind: ClassVar[ErrorKind] = "server_error"


class KvPoolFull(ServerError):
    """llama-server's slots share one KV pool (its default: four slots, unified), and the
    requests in flight together outgrew it: the server fails every one of them at once, this
    one among them, though each alone may fit. Another request of Brim's, or another client,
    was drawing on the same pool. `partial` is an answer cut short by it, when one had begun
    (kept only if no retry replaces it)."""

    kind: ClassVar[ErrorKind] = "kv_pool_full"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.partial: object | None = None


class ProtocolError(ProviderError):
    kind: ClassVar[ErrorKind] = "protocol_error"
