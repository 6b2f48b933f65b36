"""A fake model for memory tests: one responder that plays the chat model, the summarizer,
the memory extractor and the curator, told apart by their system prompts (a replayed
extraction, on the conversation as last sent, by its instruction's mark), over the fake
llama-server (real HTTP on loopback)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.context.guided import is_compaction_request
from engine.memory.replayed_scan import MEMORY_REPLAY_MARK, is_memory_replay
from tests.helpers.fake_engines import FakeToolCall, Reply

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n- (none)\n## Covered So Far\n- (none)\n"
    "## Progress\n### Done\n- (none)\n### In Progress\n- (none)\n### Blocked\n- (none)\n"
    "## Key Decisions\n- (none)\n## Next Steps\n- (none)\n## Critical Context\n- (none)\n"
)
_SOURCE = re.compile(r"\[user message · source ([a-z0-9-]+)\]\n(.*?)(?=\n\n\[|\nSCAN>>>)", re.S)


def role_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    text = str(first.get("content", "")) if first.get("role") == "system" else ""
    last = str(body["messages"][-1].get("content", ""))
    if "You write checkpoints" in text or is_compaction_request(text, last):
        return "summarizer"
    if "memory extractor" in text or is_memory_replay(last):
        return "extractor"
    if "memory curator" in text:
        return "curator"
    return "chat"


def tags_in(prompt: str) -> dict[str, str]:
    """source ID -> the user message's text, as the extractor prompt shows them."""
    return {tag: text for tag, text in _SOURCE.findall(prompt)}


def is_replayed(body: dict[str, Any]) -> bool:
    """An extraction asked on the replayed conversation (no source IDs, JSON only)."""
    return is_memory_replay(str(body["messages"][-1].get("content", "")))


def sources_in(body: dict[str, Any]) -> dict[str, str]:
    """The user messages an extraction request shows: by source ID in the transcript form;
    in the replayed form, which shows none, every user message of the conversation (its
    instruction taken off), under a made-up name the extractor does not read."""
    if not is_replayed(body):
        return tags_in(str(body["messages"][1]["content"]))
    out: dict[str, str] = {}
    for message in body["messages"]:
        if message.get("role") == "user":
            text = str(message.get("content", "")).split(MEMORY_REPLAY_MARK)[0].strip()
            if text:
                out[f"replayed-{len(out) + 1}"] = text
    return out


@dataclass
class Save:
    """What a well-behaved extractor saves when it sees `sentence` in a user source."""

    sentence: str
    subject: str
    content: str
    scope: str = "global"


Policy = Callable[[dict[str, Any]], list[dict[str, Any]]]  # extractor body -> tool arguments


def saving(*saves: Save) -> Policy:
    def policy(body: dict[str, Any]) -> list[dict[str, Any]]:
        calls = []
        for tag, text in sources_in(body).items():
            for save in saves:
                if save.sentence in text:
                    calls.append(
                        {
                            "action": "create",
                            "scope": save.scope,
                            "subject": save.subject,
                            "content": save.content,
                            "quote": save.sentence,
                            "source": tag,
                        }
                    )
        return calls

    return policy


@dataclass
class FakeModel:
    """The responder. `extract` decides the extractor's manage_memory calls; with `as_json`
    it answers in the JSON fallback instead of calling tools."""

    extract: Policy = field(default=lambda body: [])
    as_json: bool = False
    chat_reply: str = "ok"
    curate: Callable[[dict[str, Any]], list[dict[str, Any]]] = field(default=lambda body: [])
    chat: Callable[[dict[str, Any]], Reply] | None = None  # the agent's own answers
    seen: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __call__(self, request: Any) -> Reply:
        body = request.body
        role = role_of(body)
        self.seen.setdefault(role, []).append(body)
        if role == "summarizer":
            return Reply(text=SUMMARY)
        if role == "extractor":
            if body["messages"][-1].get("role") == "tool":
                return Reply(text="Done.")
            calls = self.extract(body)
            if self.as_json or is_replayed(body):  # the replayed form asks for JSON only
                return Reply(text=json.dumps({"memories": calls, "lessons": []}))
            if not calls:
                return Reply(text='{"memories": [], "lessons": []}')
            return Reply(text="", tool_calls=[FakeToolCall("manage_memory", c) for c in calls])
        if role == "curator":
            revisions = self.curate(body)
            if not revisions:
                return Reply(text='{"revisions": []}')
            return Reply(text="", tool_calls=[FakeToolCall("revise_memory", r) for r in revisions])
        if self.chat is not None:
            return self.chat(without_nudges(body))
        return Reply(text=self.chat_reply)


def without_nudges(body: dict[str, Any]) -> dict[str, Any]:
    """The request as a model reads its task: Brim's pressure notes ("[CONTEXT WARNING: …",
    "[ITERATION …") ride in a user message after a tool result, and a scripted model that
    keys on the last message must not take one for a new request from the user."""
    messages = [
        m
        for m in body.get("messages") or []
        if not (
            m.get("role") == "user"
            and str(m.get("content") or "").startswith(("[CONTEXT ", "[ITERATION "))
        )
    ]
    return {**body, "messages": messages}
