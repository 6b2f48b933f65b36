"""Whether the agent's model is sent tools, and what a new conversation says because of it.

The file tools need a workspace to stay inside; an agent's MCP servers need none (a clock, a
web search), so with MCP servers and no folder the tools go out without the file tools. A
model whose engine says it cannot call tools is sent none (Ollama refuses the whole
request). The system prompt follows the same decision: it names tools and the working
directory only when they go out, so a model that has none is not invited to invent what a
file holds. What is withheld (a folder's tools from such a model, its MCP tools, the file
tools of an MCP agent without a folder) is said once, with the reason as data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.config import AgentConfig
from engine.events import (
    NOTICE_TOOLS_UNAVAILABLE,
    TOOLS_REASON_MODEL,
    TOOLS_REASON_NO_FOLDER,
    NoticeEvent,
)
from engine.memory import standing_for
from engine.messages import Message, model_messages, system
from engine.prompt import system_prompt
from engine.resources import prompt
from engine.session.conversation import Conversation
from engine.session.ledger import notice_message
from engine.window.resolution import WindowResolution


def tools_offered(
    workspace: Path | None, window: WindowResolution | None, *, mcp: bool = False
) -> bool:
    """Tools go out with a workspace or MCP servers (`mcp`), to a model not known to be
    unable to call them (an unknown window or an engine that does not say keeps them)."""
    wanted = workspace is not None or mcp
    return wanted and (window is None or window.tool_calls is not False)


@dataclass(frozen=True)
class PromptParts:
    """What a new conversation's system prompt is made of, besides whether tools go out."""

    agent_prompt: str
    workspace: Path | None
    memory_line: str
    mcp: bool = False  # the agent has MCP servers: tools go out without a folder too


def prompt_parts(agent: AgentConfig, workspace: Path | None, memory_line: str) -> PromptParts:
    """The prompt's parts for `agent` working in `workspace` (None: no folder)."""
    return PromptParts(agent.system_prompt, workspace, memory_line, mcp=bool(agent.mcp))


# A changed stable prompt's message keeps the prompt itself here; its content frames it.
PROMPT_META = "system_prompt"
CHANGED_PROMPT = prompt("system_changed")


def _prompt_text(
    parts: PromptParts, window: WindowResolution | None, *, as_saved: bool = False
) -> str:
    """The stable prompt for `parts`; its memory line worded for whether tools go out
    (`as_saved`: the line as the saved conversation's prompt has it, whatever its wording)."""
    workspace = parts.workspace
    tools = tools_offered(workspace, window, mcp=parts.mcp)
    line = parts.memory_line if as_saved else standing_for(parts.memory_line, tools=tools)
    return system_prompt(
        parts.agent_prompt,
        workspace=workspace.resolve() if workspace is not None else None,
        memory_line=line,
        tools=tools,
    )


def opening_system_message(
    messages: list[Message], parts: PromptParts, window: WindowResolution | None
) -> Message | None:
    """A new conversation's system message, worded for whether tools are sent (`window`
    None: the engine has not said, and the tools would go out); None once `messages` holds
    anything for the model (a saved conversation keeps the prompt it was started with)."""
    if model_messages(messages):
        return None
    return system(_prompt_text(parts, window))


def prompt_in_effect(messages: list[Message]) -> str | None:
    """The stable prompt the conversation follows: the latest change's, else the opening
    system message's (None when there is none)."""
    for message in reversed(model_messages(messages)):
        if message.role == "system" and message.kind == "chat":
            return str(message.meta_value(PROMPT_META) or message.content)
    return None


def changed_system_message(
    messages: list[Message], parts: PromptParts, window: WindowResolution
) -> Message | None:
    """The new system message a saved conversation gets when its stable prompt changed
    since it was written (an edited agent prompt, project instructions, another working
    directory, tools no longer sent), else None.

    Seed 003: the change is retained as a new system message, after the history; the
    messages before it stay byte for byte as they were. On the wire it joins the leading
    system message (messages.alternating), as templates with one system message need.
    Asked only once `window` is the engine's, so a guess about tools writes no change."""
    before = prompt_in_effect(messages)
    if before is None:
        return None
    text = _prompt_text(parts, window)
    # A prompt an older Brim wrote keeps its memory line's wording: it is not a change.
    if before in (text, _prompt_text(parts, window, as_saved=True)):
        return None
    return system(CHANGED_PROMPT.format(prompt=text).strip(), meta=((PROMPT_META, text),))


def system_message_due(
    messages: list[Message], parts: PromptParts, window: WindowResolution | None
) -> Message | None:
    """The system message to write now: a new conversation's opening one (once it is known
    whether tools go out), or a saved one's changed stable prompt (once the window is the
    engine's, so a guess about tools writes no change); None when there is none."""
    if opening := opening_system_message(messages, parts, window):
        return opening
    return changed_system_message(messages, parts, window) if window is not None else None


def no_tool_calls_notice(model: str, workspace: Path | None, servers: tuple[str, ...] = ()) -> str:
    """A folder was given for the agent to work in, or MCP servers, but the model cannot
    call tools."""
    what = []
    if workspace is not None:
        what.append(f"read files in {workspace} or run commands")
    if servers:
        what.append(f"use the tools of its MCP servers ({', '.join(servers)})")
    return (
        f"{model} cannot call tools (so its engine reports), so the agent cannot "
        f"{' nor '.join(what)}. For work with tools, pick a model that calls them "
        "(Qwen2.5 Instruct, for example) in the agent editor."
    )


def no_folder_notice(servers: tuple[str, ...]) -> str:
    """An agent with MCP servers, in a conversation without a folder."""
    return (
        f"The agent has its MCP servers' tools ({', '.join(servers)}) but no file tools: "
        "this conversation has no folder to work in. Choose a folder in the sidebar for "
        "reading files and running commands."
    )


def tools_withheld(
    agent: AgentConfig,
    workspace: Path | None,
    window: WindowResolution,
    conversation: Conversation,
) -> Message | None:
    """The notice a conversation keeps when tools it was given are withheld: a folder or
    MCP servers given to a model that cannot call tools, or the file tools of an agent
    with MCP servers but no folder. None when nothing is withheld or it was said already."""
    servers = tuple(server.name for server in agent.mcp)
    details: dict[str, int | str]
    if window.tool_calls is False and (workspace is not None or servers):
        text = no_tool_calls_notice(window.model, workspace, servers)
        details = {"reason": TOOLS_REASON_MODEL, "model": window.model}
    elif workspace is None and servers:
        text = no_folder_notice(servers)
        details = {"reason": TOOLS_REASON_NO_FOLDER, "withheld": "files"}
    else:
        return None
    if conversation.has_notice(text):
        return None
    event = NoticeEvent("warning", text, kind=NOTICE_TOOLS_UNAVAILABLE, details=details)
    return notice_message(event)
