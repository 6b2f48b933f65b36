"""Telling a compaction's requests from the agent's in what a fake engine received.

A compaction asks in one of two forms: the fenced transcript (its own system prompt) or,
on the agent's own model, the conversation as last sent with the checkpoint instruction
(or a guided question) after it. Doubles answer those with a checkpoint; matching on a
heading name instead would also catch a chat request whose system message carries one.
"""

from __future__ import annotations

from typing import Any

from engine.context.guided import is_compaction_request


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether a recorded chat request body is one a compaction sent."""
    messages = body.get("messages") or []
    if not messages:
        return False
    first = messages[0]
    system = str(first.get("content", "")) if first.get("role") == "system" else ""
    return is_compaction_request(system, str(messages[-1].get("content", "")))
