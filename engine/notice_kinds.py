"""The kinds a notice may carry, and the figures each one reports in its `details`.

Kept apart from the events themselves (engine/events.py hands every name on), so the list of
kinds and their documentation reads as one table.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# Every kind a notice may carry ("" for a plain notice); the constants below name them.
NoticeKind = Literal[
    "",
    "answer_cut",
    "thinking_cut",
    "repetition",
    "tool_calls_capped",
    "tools_unavailable",
    "reasoning_unavailable",
    "auto_compacting",
    "compacted",
    "trimmed",
    "compaction_fallback",
    "nothing_to_compact",
    "overflow",
    "cut_to_fit",
    "window_learned",
    "window_not_believed",
    "window_dropped",
    "model_reloaded",
    "shared_kv_pool",
    "answer_room_lowered",
    "compaction_restored",
    "restore_unconfirmed",
    "ollama_openai_endpoint",
    "model_renamed",
    "view_fallback",
    "secret_redacted",
    "model_spilled_to_cpu",
    "mcp_tools_joined",
    "pin_not_honoured",
    "pin_lowered",
    "spill_choice",
]


def notice_kind(value: object) -> NoticeKind:
    """A saved notice's kind read back: one of NoticeKind, or "" for anything else."""
    return value if isinstance(value, str) and value in get_args(NoticeKind) else ""  # type: ignore[return-value]


NOTICE_ANSWER_CUT: Final = "answer_cut"
# The cap went on reasoning, no answer (Continue offered): as answer_cut, plus reasoning_tokens
NOTICE_THINKING_CUT: Final = "thinking_cut"
NOTICE_REPETITION: Final = "repetition"
# More tool calls in one answer than run (engine/agent/answer_calls.py): calls, run, not_run.
NOTICE_CALLS_CAPPED: Final = "tool_calls_capped"
# Tools the agent was given are withheld in this conversation: `reason` says why (the model
# cannot call tools, so its engine reports; the engine refused them; or, for an agent with
# MCP servers, no folder: `withheld` is "files", the MCP tools still go out).
NOTICE_TOOLS_UNAVAILABLE: Final = "tools_unavailable"
# The agent's reasoning setting is not sent: the model cannot reason (asked, model).
NOTICE_REASONING_UNAVAILABLE: Final = "reasoning_unavailable"
TOOLS_REASON_MODEL = "model_cannot_call_tools"
TOOLS_REASON_ENGINE = "engine_refused"
TOOLS_REASON_NO_FOLDER = "no_folder"
# The context ladder's notices (engine/context/manager.py), with their figures in `details`:
# NOTICE_AUTO_COMPACTING (the "…: auto-compacting…" line: used, window), NOTICE_COMPACTED
# (the compaction that finished: messages_before, messages_after, tokens_saved, and summary,
# as on the compaction event: "freeform", "guided" or "mechanical"; the saved
# row that replaces the ladder's line keeps the kind), NOTICE_TRIMMED (messages discarded
# without a summary: messages_dropped), NOTICE_COMPACTION_FALLBACK (compaction could not
# run, the history was trimmed instead or left: messages_dropped), NOTICE_NOTHING_TO_COMPACT
# and NOTICE_OVERFLOW (the engine refused the request as too long: compacting to retry).
NOTICE_AUTO_COMPACTING: Final = "auto_compacting"
NOTICE_COMPACTED: Final = "compacted"
NOTICE_TRIMMED: Final = "trimmed"
NOTICE_COMPACTION_FALLBACK: Final = "compaction_fallback"
NOTICE_NOTHING_TO_COMPACT: Final = "nothing_to_compact"
NOTICE_OVERFLOW: Final = "overflow"
# The fit rung cut the newest step so the request fits the window (engine/context/fitting.py):
# results_cut, arguments_cut, calls_left_out, tokens_before, tokens_after, window.
NOTICE_CUT_TO_FIT: Final = "cut_to_fit"
# The window the engine revealed (engine/agent/window.py): NOTICE_WINDOW_LEARNED (window,
# old, source, cause, compacts_at), NOTICE_WINDOW_DOUBTED (an overflow error's window not
# believed: window, source, cause, reason, evidence, kept) and NOTICE_WINDOW_DROPPED (a
# provisional window a larger answered request contradicted: window, cause, answered,
# restored, source).
NOTICE_WINDOW_LEARNED: Final = "window_learned"
NOTICE_WINDOW_DOUBTED: Final = "window_not_believed"
NOTICE_WINDOW_DROPPED: Final = "window_dropped"
# An Ollama model reloaded between Brim's requests (engine/window/reloads.py): cause
# (expired | another_client), model, window (now), old, load_ms (0: Brim's request did not
# load it), compacts_at.
NOTICE_MODEL_RELOADED: Final = "model_reloaded"
# llama-server's slots share one KV pool and the requests in flight outgrew it; Brim waits
# and retries (engine/agent/shared_pool.py). Said once per conversation: pool (tokens), slots (0:
# not reported), needed (what Brim's request asked the pool to hold), retries (at most).
NOTICE_SHARED_POOL: Final = "shared_kv_pool"
# vLLM or SGLang refused prompt + max_tokens, the prompt alone fits: the same request went
# again with the room the engine left (engine/window/output_cap.py): max_tokens, refused,
# prompt_tokens (the engine's count), counted (Brim's), window.
NOTICE_ANSWER_ROOM: Final = "answer_room_lowered"
# The model missed call_tool (engine/mcp/joining.py): the loaded MCP tools join the tools
# block, each later load too, so the engine evaluates the prompt again from the start: reason
# (calls_missed), misses, tools (joined now).
NOTICE_MCP_TOOLS_JOINED: Final = "mcp_tools_joined"
# The engine allocated less than the agent's pin (engine/window/pin_check.py), said once after
# the load: asked, allocated, cause (training_length | parallel_split | unknown), engine,
# model, and slots and model_max where known.
NOTICE_PIN_NOT_HONOURED: Final = "pin_not_honoured"
# The agent's fit policy (on_spill, engine/window/fit_policy.py) met a model partly on the
# CPU: NOTICE_PIN_LOWERED (shrink: asked, lowered_to, cpu_percent, compacts_at) and
# NOTICE_SPILL_CHOICE (ask: asked, fits, cpu_percent, choices "keep,shrink").
NOTICE_SPILLED: Final = "model_spilled_to_cpu"  # engine/providers/ollama_spill.py
NOTICE_PIN_LOWERED: Final = "pin_lowered"
NOTICE_SPILL_CHOICE: Final = "spill_choice"
