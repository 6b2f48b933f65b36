"""Exact token counts for a GGUF model, computed in Brim's own process.

The GGUF is opened with `vocab_only=True`: the tokenizer and the chat template, no weights
and no decoding, so it is cheap (a fraction of a second) and cannot hit the native decode
crash that the embedded engine is isolated from.

A request's count splits into per-message segments plus fixed framing, so the counter can
cache each message by its content hash:

    count(request) == request_overhead(has_tools, first_role) + sum(count_message(m))

and, with tools, `+ count_tools(tools)`. A message's segment is the text the template adds
for it after a neutral prefix, tokenized alone. That is exact for templates whose messages
begin and end at special tokens (ChatML and most others), which cut the token stream at
message boundaries. Templates that insert
a default system prompt when the conversation does not start with one (SmolLM2, Qwen2.5)
make the framing depend on the first message's role; `first_role` says which it is.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator
from typing import Any

from engine.messages import Message, assistant, system, user
from engine.providers.chat_template import ChatTemplate, prompt_tokens, template_messages

_ANCHOR = "x"

# What a message is rendered after when measuring its segment, by role, in order of
# preference. Strict templates reject some orders (roles must alternate, system only first).
_PREFIXES: dict[str, tuple[tuple[Message, ...], ...]] = {
    "system": ((system(_ANCHOR),), (system(_ANCHOR), user(_ANCHOR))),
    "user": ((system(_ANCHOR),), (system(_ANCHOR), user(_ANCHOR), assistant(_ANCHOR))),
    "assistant": ((system(_ANCHOR), user(_ANCHOR)), (system(_ANCHOR),)),
    "tool": (
        (system(_ANCHOR), user(_ANCHOR), assistant(_ANCHOR)),
        (system(_ANCHOR), user(_ANCHOR)),
        (system(_ANCHOR),),
    ),
}


@contextlib.contextmanager
def _without_the_vocab_only_warning() -> Iterator[None]:
    """A vocabulary-only model has no training length, so llama.cpp logs a "possible
    training context overflow" error for its (unused) context; Brim's stderr is for real
    problems, so that one line is dropped and every other one passes through."""
    import llama_cpp

    try:
        from llama_cpp._logger import llama_log_callback as original
    except ImportError:  # the library reorganised its logging; live with the line
        yield
        return

    def forward(level: int, text: bytes, data: ctypes.c_void_p) -> None:
        if b"n_ctx_train (0)" not in (text or b""):
            original(level, text, data)

    filtered = llama_cpp.llama_log_callback(forward)
    llama_cpp.llama_log_set(filtered, ctypes.c_void_p(0))
    try:
        yield
    finally:
        llama_cpp.llama_log_set(original, ctypes.c_void_p(0))


def _shared_head(a: str, b: str) -> int:
    """How many leading characters two texts share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class GgufTokenizer:
    """A `SegmentTokenizer` for one GGUF file, plus whole-request counting."""

    def __init__(self, model_path: str) -> None:
        from llama_cpp import Llama

        self.model_path = model_path
        with _without_the_vocab_only_warning():
            self._llm = Llama(model_path=model_path, vocab_only=True, verbose=False)
        self.template = ChatTemplate.from_llama(self._llm)
        self._lock = threading.Lock()  # one vocab, callers on the loop and in worker threads
        self._overheads: dict[str, int] = {}
        self._prefixes: dict[tuple[Message, ...], str] = {}

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        with self._lock:
            return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def count_text(self, text: str) -> int:
        return len(self.tokenize(text))

    def _count_rendered(self, prompt: str, add_bos: bool) -> int:
        with self._lock:
            return len(prompt_tokens(self._llm, prompt, add_bos))

    def count_request(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """Exactly the prompt tokens the embedded engine evaluates for this request."""
        prompt, add_bos = self.template.render(template_messages(messages), tools)
        return self._count_rendered(prompt, add_bos)

    def request_tokens(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """The prompt's token ids as the embedded engine evaluates them (what two requests
        share is their common prefix: the most its KV cache can reuse)."""
        prompt, add_bos = self.template.render(template_messages(messages), tools)
        with self._lock:
            return list(prompt_tokens(self._llm, prompt, add_bos))

    def count_message(self, message: Message) -> int:
        if message.is_notice:
            return 0
        segment = self._segment(message)
        if segment is None:  # no neutral prefix renders: the content plus typical framing
            return self.count_text(message.content) + 4
        return self._count_rendered(segment, False)

    def _rendered_prefix(self, prefix: tuple[Message, ...]) -> str:
        before = self._prefixes.get(prefix)
        if before is None:
            before, _ = self.template.render(template_messages(prefix), add_generation_prompt=False)
            self._prefixes[prefix] = before
        return before

    def _segment(self, message: Message) -> str | None:
        for prefix in _PREFIXES.get(message.role, _PREFIXES["user"]):
            try:
                before = self._rendered_prefix(prefix)
                after, _ = self.template.render(
                    template_messages((*prefix, message)), add_generation_prompt=False
                )
            except Exception:  # a template's raise_exception, or one that trips on the order
                continue
            if after.startswith(before):
                return after[len(before) :]
        return self._folded(message) if message.role == "system" else None

    def _folded(self, message: Message) -> str | None:
        """A system message that a template without a system role folds into the first user
        turn (Gemma's): the text it inserts there, found as the one contiguous difference
        between that turn rendered with it and without it."""
        try:
            base = self._rendered_prefix((user(_ANCHOR),))
            with_it, _ = self.template.render(
                template_messages((message, user(_ANCHOR))), add_generation_prompt=False
            )
        except Exception:
            return None
        head = _shared_head(base, with_it)
        tail = _shared_head(base[head:][::-1], with_it[head:][::-1])
        if head + tail != len(base):
            return None
        return with_it[head : len(with_it) - tail]

    def request_overhead(self, has_tools: bool, first_role: str | None = None) -> int:
        """The framing around the messages: the generation prompt and any default system
        prompt the template inserts when `first_role` is not "system". `first_role` None
        means the request starts with a system message (Brim's always do). Tool schemas are
        not framing: `count_tools` measures what they add, whatever `has_tools` says."""
        role = first_role or "system"
        if role not in self._overheads:
            probe = [Message(role=role, content=_ANCHOR)]  # type: ignore[arg-type]
            if role == "system":  # as Brim sends it: a user turn follows (a folding
                probe.append(user(_ANCHOR))  # template has no turn for a system alone)
            framed = self.count_request(probe) - sum(self.count_message(m) for m in probe)
            self._overheads[role] = framed
        return self._overheads[role]

    def count_tools(self, tools: list[dict[str, Any]]) -> int:
        """What these tool schemas add to a request as the template renders them: 0 for a
        template that ignores tools (the embedded engine then does not send them)."""
        if not tools or not self.template.supports_tools:
            return 0
        probe = [system(_ANCHOR), user(_ANCHOR)]
        return self.count_request(probe, tools) - self.count_request(probe)
