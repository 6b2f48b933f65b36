"""One conversation with one agent, as objects with one job each (see engine/session/chat.py).

The names the desktop, the CLI and the tests import from `engine.session`.
"""

from engine.session.budget import RESERVES_OUTPUT, output_reserve, pin_advice
from engine.session.chat import ChatSession, EventSink
from engine.session.conversation import RECEIPTS_SHOWN, Conversation
from engine.session.engine_calls import (
    LOAD_POLL_S,
    LOAD_WAIT_LIMIT_S,
    probe_window,
    provider_for,
    record_request_usage,
    summarize,
    wait_until_ready,
)
from engine.session.ledger import ContextLedger, LedgerInputs
from engine.session.outcome import describe_outcome
from engine.session.wiring import LoopHooks, LoopSetting, WiredLoop, wire_agent_loop
from engine.store import UnknownConversation

__all__ = [
    "LOAD_POLL_S",
    "LOAD_WAIT_LIMIT_S",
    "RECEIPTS_SHOWN",
    "RESERVES_OUTPUT",
    "ChatSession",
    "ContextLedger",
    "Conversation",
    "EventSink",
    "LedgerInputs",
    "LoopHooks",
    "LoopSetting",
    "UnknownConversation",
    "WiredLoop",
    "describe_outcome",
    "output_reserve",
    "pin_advice",
    "probe_window",
    "provider_for",
    "record_request_usage",
    "summarize",
    "wait_until_ready",
    "wire_agent_loop",
]
