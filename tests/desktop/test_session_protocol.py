"""The session the desktop drives: ChatSession, the tests' fake and the UI bench's streaming
session all implement every member of `SessionControl`, with the protocol's signatures (no
member is optional)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from bench.streaming_session import StreamingSession
from engine.api import BrimPaths, ChatSession, SessionControl
from engine.config import default_agent
from engine.events import discard
from tests.helpers.fake_session import FakeSession


def _members() -> dict[str, Any]:
    """The protocol's members: its annotated attributes and what its body defines."""
    members: dict[str, Any] = dict.fromkeys(SessionControl.__annotations__)
    for name, value in vars(SessionControl).items():
        if name.startswith("_"):
            continue  # dunders and typing's own bookkeeping
        members[name] = value
    return members


def _shape(function: Any) -> tuple[bool, list[tuple[str, Any]]]:
    """Whether it is a coroutine function, and its parameters by name and kind."""
    signature = inspect.signature(function)
    return inspect.iscoroutinefunction(function), [
        (p.name, p.kind) for p in signature.parameters.values()
    ]


def _sessions(tmp_path: Path) -> list[Any]:
    real = ChatSession(default_agent(), BrimPaths.under(tmp_path), discard)
    return [real, FakeSession(discard), StreamingSession(discard, ["a"])]


def test_the_protocol_names_what_the_bridge_and_window_use():
    assert set(_members()) == {
        "conversation_id",
        "agent",
        "workspace",
        "window",
        "start",
        "send",
        "cancel",
        "retry",
        "open_conversation",
        "close",
        "history",
        "transcript",
        "turn_receipts",
        "lower_pin",
    }


@pytest.mark.parametrize("which", ["ChatSession", "FakeSession", "StreamingSession"])
def test_each_session_has_every_member_with_the_protocols_signature(tmp_path: Path, which: str):
    session = next(s for s in _sessions(tmp_path) if type(s).__name__ == which)
    cls = type(session)
    for name, declared in _members().items():
        assert hasattr(session, name), f"{which} lacks {name}"
        if declared is None:
            continue  # an attribute: present is enough
        if isinstance(declared, property):
            assert isinstance(inspect.getattr_static(cls, name), property), f"{which}.{name}"
            continue
        implemented = inspect.getattr_static(cls, name)
        assert callable(implemented), f"{which}.{name} is not a method"
        assert _shape(implemented) == _shape(declared), f"{which}.{name}"
