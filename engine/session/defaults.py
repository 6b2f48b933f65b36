"""The session a fresh desktop opens: the default agent, memory on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from engine.config import default_agent
from engine.events import EventSink
from engine.paths import BrimPaths
from engine.session.chat import ChatSession


def open_default_session(sink: EventSink, *, data_dir: Path | None = None) -> ChatSession:
    """The desktop's session on the default agent, with every path under `data_dir`."""
    paths = BrimPaths.resolve(data_dir)
    return ChatSession(replace(default_agent()), paths, sink, memory=True, reflect_on_close=True)
