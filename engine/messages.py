"""The conversation's message model, shared by the store, the counter, the ladder and providers.

Messages are immutable values: clearing a tool result or merging a summary makes a new
message with `dataclasses.replace`, so a content hash computed once stays valid for as long
as the message object lives, and the token counter can cache by it.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool", "notice"]

# What a message is for, beyond its role. The ladder treats these differently:
# "pinned", "summary" and "continuation" always survive trimming; "notice" rows are shown
# and saved but never sent to the model.
Kind = Literal["chat", "pinned", "task", "summary", "continuation", "notice"]

PROTECTED_KINDS: frozenset[str] = frozenset({"pinned", "task", "summary", "continuation"})


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. `arguments` is the JSON text exactly as the model wrote it."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; malformed JSON from the model yields an empty dict."""
        try:
            value = json.loads(self.arguments or "{}")
        except (json.JSONDecodeError, RecursionError):  # nested too deeply is malformed too
            return {}
        return value if isinstance(value, dict) else {}

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the tool's name, on tool results
    kind: Kind = "chat"
    id: str = field(default_factory=new_id)
    created: float = field(default_factory=time.time)
    # Free-form facts the ladder records on a message (e.g. {"cleared": True}).
    meta: tuple[tuple[str, Any], ...] = ()
    # What a thinking model reasoned before this answer (assistant messages only). Kept with
    # the message for the user (shown folded, exported, restored), never in `content`, and
    # not sent back to the model except where its template needs it within a tool-calling
    # turn (the provider decides). Not part of `content_hash`: it is not what the model reads.
    reasoning: str = ""

    @property
    def is_notice(self) -> bool:
        return self.role == "notice" or self.kind == "notice"

    @property
    def content_hash(self) -> str:
        """A hash of everything that reaches the model; identity and timestamps excluded."""
        cached = self.__dict__.get("_content_hash")
        if cached is None:
            h = hashlib.blake2b(digest_size=16)
            h.update(self.role.encode())
            h.update(b"\0")
            h.update(self.content.encode("utf-8", "surrogatepass"))
            for call in self.tool_calls:
                h.update(b"\0call\0" + call.id.encode() + b"\0" + call.name.encode())
                h.update(b"\0" + call.arguments.encode("utf-8", "surrogatepass"))
            if self.tool_call_id:
                h.update(b"\0result\0" + self.tool_call_id.encode())
            if self.name:
                h.update(b"\0name\0" + self.name.encode())
            cached = h.hexdigest()
            object.__setattr__(self, "_content_hash", cached)
        return cached

    def meta_value(self, key: str, default: Any = None) -> Any:
        for k, v in self.meta:
            if k == key:
                return v
        return default

    def with_meta(self, **values: Any) -> Message:
        merged = dict(self.meta)
        merged.update(values)
        return replace(self, meta=tuple(sorted(merged.items())))

    def to_dict(self) -> dict[str, Any]:
        """The export form (`brim conversations export`)."""
        return {
            "id": self.id,
            "role": self.role,
            "kind": self.kind,
            "content": self.content,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "created": self.created,
            **({"reasoning": self.reasoning} if self.reasoning else {}),
        }


def system(content: str, **kw: Any) -> Message:
    return Message(role="system", content=content, **kw)


def user(content: str, **kw: Any) -> Message:
    return Message(role="user", content=content, **kw)


def assistant(content: str, tool_calls: tuple[ToolCall, ...] = (), **kw: Any) -> Message:
    return Message(role="assistant", content=content, tool_calls=tool_calls, **kw)


def tool_result(call: ToolCall, content: str, **kw: Any) -> Message:
    return Message(role="tool", content=content, tool_call_id=call.id, name=call.name, **kw)


def notice(text: str, level: str = "info") -> Message:
    return Message(role="notice", content=text, kind="notice", meta=(("level", level),))


def model_messages(messages: list[Message]) -> list[Message]:
    """The messages a model may see: everything but notice rows."""
    return [m for m in messages if not m.is_notice]


def alternating(messages: list[Message]) -> list[Message]:
    """The request as it goes on the wire: consecutive user messages joined into one, and a
    compaction summary (or a later system message: a changed stable prompt) joined into the
    leading system message.

    Strict chat templates (Gemma's, Mistral's) refuse two user turns in a row, and Brim
    makes them: the ephemeral pressure nudge after the user's message, the journal preamble
    of a resumed conversation before the next one. Many also take one system message only,
    first; the summary is condensed history in the system role (docs/design/context.md), so
    it goes into that one message, after the system prompt (a summary saved by an older Brim as an
    assistant message goes there too). A summary that follows kept messages of the
    conversation instead (laid there for an engine that reuses them where they now stand)
    is a user turn there. Joining is deterministic, so a stable history stays a stable
    prefix: the system prompt's own text still leads the request."""
    out: list[Message] = []
    conversed = False  # a message of the conversation itself (not the fixed head) is out
    for message in messages:
        if message.kind == "summary" and conversed:
            # A checkpoint after kept messages (an engine that reuses them where they now
            # stand): a user turn in its place, joined with the request that follows it.
            message = replace(message, role="user")
        elif message.kind == "summary" or (message.role == "system" and out):
            if out and out[0].role == "system":
                out[0] = replace(out[0], content=out[0].content + "\n\n" + message.content)
            else:
                out.append(replace(message, role="system"))
            continue
        conversed = conversed or (message.kind == "chat" and message.role != "system")
        previous = out[-1] if out else None
        if previous is not None and previous.role == "user" and message.role == "user":
            out[-1] = replace(previous, content=previous.content + "\n\n" + message.content)
        else:
            out.append(message)
    return out


def to_openai(message: Message) -> dict[str, Any]:
    """The OpenAI chat-completions shape, which llama-server, vLLM and SGLang all accept."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        if message.name:
            out["name"] = message.name
    return out
