"""The stable part of the prompt, assembled once per conversation.

The system message is written at the head of the conversation and never rewritten, so with
the (deterministically ordered) tool schemas it forms a byte-identical prefix that engines
reuse from their KV cache. Anything that changes per run goes after the history instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def system_prompt(
    agent_prompt: str,
    *,
    workspace: Path | None,
    memory_line: str = "",
) -> str:
    """Agent prompt, project instructions, memory standing line, working directory."""
    parts = [agent_prompt.strip()]
    for item in project_instructions(workspace):
        cut = "\n(truncated)" if item.truncated else ""
        parts.append(f"# Project instructions ({item.name})\n{item.text.strip()}{cut}")
    if memory_line.strip():
        parts.append(memory_line.strip())
    if workspace is not None:
        parts.append(f"Working directory: {workspace}")
    return "\n\n".join(p for p in parts if p)
