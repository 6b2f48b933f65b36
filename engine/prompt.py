"""The stable part of the prompt, assembled once per conversation.

The system message is written at the head of the conversation and never rewritten, so with
the (deterministically ordered) tool schemas it forms a byte-identical prefix that engines
reuse from their KV cache. Anything that changes per run goes after the history instead; a
stable prompt that changed (an edited agent) is kept as a new system message
(engine/session/tools_offer.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.resources import prompt

PROJECT_INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "BRIM.md")
MAX_INSTRUCTION_CHARS = 16_000


@dataclass(frozen=True)
class ProjectInstructions:
    name: str
    text: str
    truncated: bool


def project_instructions(workspace: Path | None) -> list[ProjectInstructions]:
    """The workspace's instruction files, in a fixed order; unreadable ones are skipped."""
    if workspace is None:
        return []
    found: list[ProjectInstructions] = []
    for name in PROJECT_INSTRUCTION_FILES:
        path = workspace / name
        try:
            if path.is_symlink() or not path.is_file():
                continue
            raw = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        truncated = len(raw) > MAX_INSTRUCTION_CHARS
        found.append(ProjectInstructions(name, raw[:MAX_INSTRUCTION_CHARS], truncated))
    return found


def tool_free_prompt(agent_prompt: str) -> str:
    """The agent's prompt for a model that is sent no tools: Brim's default names tools, so
    it gives way to its tool-free twin; a prompt the user wrote is theirs and stays."""
    if agent_prompt.strip() == prompt("system").strip():
        return prompt("system_no_tools")
    return agent_prompt


def project_block(item: ProjectInstructions) -> str:
    """The text one instructions file adds to the system prompt."""
    cut = "\n(truncated)" if item.truncated else ""
    return f"# Project instructions ({item.name})\n{item.text.strip()}{cut}"


def system_prompt(
    agent_prompt: str,
    *,
    workspace: Path | None,
    memory_line: str = "",
    tools: bool = True,
) -> str:
    """Agent prompt, project instructions, memory standing line, working directory.

    Without `tools` (none are sent) nothing in it invites the model to use one: the default
    prompt's tool-free twin, and no working directory, so a small model is not led to
    invent what a file it cannot read holds."""
    parts = [(agent_prompt if tools else tool_free_prompt(agent_prompt)).strip()]
    parts.extend(project_block(item) for item in project_instructions(workspace))
    if memory_line.strip():
        parts.append(memory_line.strip())
    if workspace is not None and tools:
        parts.append(f"Working directory: {workspace}")
    return "\n\n".join(p for p in parts if p)
