"""The words the agent loop (engine/agent/loop.py) says when a run stops, is cut short or loses
something: kept apart so the loop reads as what it does, and the wording in one place."""

from __future__ import annotations

from engine.providers.errors import ContextOverflow, ToolsUnsupported
from engine.repetition import Repetition
from engine.window.output_cap import LIMIT_AGENT, LIMIT_DEFAULT, LIMIT_IGNORED


def no_tools_text(refusal: ToolsUnsupported) -> str:
    """The engine refused the tools: the conversation goes on without them."""
    return (
        f"{refusal.message}. Brim sends no tools for the rest of this conversation, so the "
        f"agent can neither read files nor run commands; to give it tools, {refusal.hint}."
    )


# What the user sends for the rest of a cut answer or a stopped run (typed headless; the
# window's Continue sends the same).
CONTINUE_TEXT = "continue"


def iteration_limit_text(iterations: int, cap: int) -> str:
    return (
        f"Iteration limit reached ({iterations}/{cap}): the run stops here. "
        "Type 'continue' to keep it going."
    )


def answer_cut_text(written: int, limit: str, window: int) -> str:
    """An answer stopped at its output cap: at how many tokens, and whose cap it was."""
    reason = cut_reason(limit, window)
    return f"Cut at {written:,} tokens: {reason}. Type '{CONTINUE_TEXT}' for the rest."


def cut_reason(limit: str, window: int) -> str:
    if limit == LIMIT_AGENT:
        return "the agent's output cap (max_tokens)"
    if limit == LIMIT_DEFAULT:
        return (
            f"the default output cap for a {window:,}-token window (set max_tokens in the "
            "agent to change it)"
        )
    if limit == "engine":
        return "the engine stopped it at its own limit"
    if limit == LIMIT_IGNORED:
        return (
            "the engine kept writing past the output cap (it ignored max_tokens), so Brim "
            "stopped it"
        )
    return f"that was all the room the {window:,}-token window had left"


def silent_cut_text(counted: int, reported: int, window: int, server_window: bool) -> str:
    """Ollama cut the prompt without saying so; `server_window`: the window is the engine's
    own (Brim compacts now), else a guess the user should pin."""
    advice = (
        "Brim compacts now."
        if server_window
        else "Pin num_ctx in the agent so Brim accounts against the real window."
    )
    return (
        f"The engine truncated the prompt: Brim sent ~{counted:,} tokens but the "
        f"engine read only {reported:,}, what its {window:,}-token window holds. " + advice
    )


def overflow_failure_text(exc: ContextOverflow) -> str:
    sizes = ""
    if exc.prompt_tokens and exc.window:
        sizes = f" ({exc.prompt_tokens:,} tokens for a window of {exc.window:,})"
    return (
        f"The engine rejected the request as too long{sizes} even after compacting. "
        "The conversation is intact; narrow the request or raise the engine's context size."
    )


def budget_stop_text(budget: int) -> str:
    return (
        f"Token budget used up ({budget:,} tokens for this run): the run stops here with its "
        "progress saved. Type 'continue' to keep it going."
    )


def repetition_notice(loop: Repetition) -> tuple[str, dict[str, int | str]]:
    """The notice for an answer the repetition guard stopped, and its figures."""
    text = (
        f"Stopped the answer: it kept repeating the same {loop.block_chars:,}-character "
        f"passage ({loop.repeats:,} times in a row). The repeats are left out of the "
        "saved answer; ask again or rephrase."
    )
    details: dict[str, int | str] = {
        "block_chars": loop.block_chars,
        "repeats": loop.repeats,
        "dropped_chars": loop.dropped_chars,
    }
    return text, details


def thinking_cut_text(max_tokens: int, limit: str, window: int) -> str:
    """The output cap was spent on reasoning and no answer came: said in so many words."""
    reason = cut_reason(limit, window)
    return (
        f"The model spent its whole answer budget of {max_tokens:,} tokens thinking and wrote "
        f"no answer ({reason}). Type '{CONTINUE_TEXT}' to ask again (its thinking is not sent "
        "back, so it starts over), or give it room: raise the agent's max_tokens or set its "
        "reasoning lower."
    )


def thinking_loop_notice(loop: Repetition) -> tuple[str, dict[str, int | str]]:
    """The notice for reasoning the repetition guard stopped, and its figures."""
    text = (
        f"Stopped the model's thinking: it kept repeating the same {loop.block_chars:,}-"
        f"character passage ({loop.repeats:,} times in a row), and no answer was written. "
        "Ask again or rephrase."
    )
    _, details = repetition_notice(loop)
    return text, {**details, "in": "reasoning"}
