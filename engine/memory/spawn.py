"""The detached `brim memory reflect` a chat starts when it closes a conversation.

Neither the person nor the chat waits on it: a short-lived launcher starts the reflection
in a new session and exits at once, so the reflection is nobody's child (no zombie, no
"still running" warning in the chat's process) and survives the chat's exit.

The reflection runs with exactly the chat's agent: every setting travels in a private
settings file (readable by its owner only, removed by the child once read) that the command
line names. Nothing secret is on that line (anyone can read it in `ps`) or in that file: an
API key travels in the child's environment, and the settings only name the variable.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.config import AgentConfig, AgentConfigError, Problem
from engine.config.credentials import CHILD_KEY_VARIABLE, agent_api_key

log = logging.getLogger(__name__)

SETTINGS_PREFIX = "brim-reflect-agent-"

_LAUNCHER = (
    "import os, subprocess, sys\n"
    "kw = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,"
    " close_fds=True)\n"
    "if os.name == 'nt':\n"
    "    kw['creationflags'] = 0x00000008 | 0x00000200  # DETACHED_PROCESS, NEW_PROCESS_GROUP\n"
    "else:\n"
    "    kw['start_new_session'] = True\n"
    "subprocess.Popen(sys.argv[1:], **kw)\n"
)


def write_agent_settings(agent: AgentConfig, *, key_variable: str | None = None) -> Path:
    """Every setting of `agent` as JSON in a new file only its owner can read. The key
    itself is never written: with `key_variable`, the file names that variable (where the
    child finds the key) in its place."""
    values = agent.values()
    values["api_key"] = None
    if key_variable is not None:
        values["api_key_env"] = key_variable
    fd, name = tempfile.mkstemp(prefix=SETTINGS_PREFIX, suffix=".json")  # mode 0600
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(values, out, ensure_ascii=False)
    return Path(name)


def read_agent_settings(path: Path) -> AgentConfig:
    """The agent a settings file describes; the file is removed once read (it was written
    for one child). Raises `AgentConfigError` for a file that holds no agent, OSError for
    one that cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    try:
        values = json.loads(text)
    except ValueError as exc:
        raise AgentConfigError(path, [Problem(None, f"not JSON: {exc}")]) from None
    if not isinstance(values, dict):
        raise AgentConfigError(path, [Problem(None, "not a JSON object of agent settings")])
    return AgentConfig.from_values(values)


def reflect_command(
    conversation_id: str | list[str],
    *,
    data_dir: Path | None,
    agent_settings: Path,
    workspace: Path | None,
) -> list[str]:
    """The reflection's command line: the conversations, and the file holding the agent."""
    cmd = [sys.executable, "-m", "engine.cli"]
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    ids = [conversation_id] if isinstance(conversation_id, str) else conversation_id
    cmd += ["memory", "reflect"]
    for one in ids:
        cmd += ["--conversation", one]
    cmd += ["--agent-settings", str(agent_settings)]
    if workspace is not None:
        cmd += ["--workspace", str(workspace)]
    return cmd


def spawn_reflection(
    agent: AgentConfig,
    conversations: str | list[str],
    *,
    data_dir: Path | None,
    workspace: Path | None,
) -> bool:
    """Start a detached reflection on `conversations` with exactly `agent`'s settings; True
    when it started. The agent's API key reaches it through its environment."""
    key = agent_api_key(agent).value
    try:
        settings = write_agent_settings(agent, key_variable=CHILD_KEY_VARIABLE if key else None)
    except OSError as exc:
        log.warning("memory: could not start the reflection: %s", exc)
        return False
    cmd = reflect_command(
        conversations, data_dir=data_dir, agent_settings=settings, workspace=workspace
    )
    started = spawn_detached(cmd, secrets={CHILD_KEY_VARIABLE: key} if key else None)
    if not started:
        with contextlib.suppress(OSError):
            settings.unlink()  # no child will read it
    return started


def spawn_detached(
    cmd: list[str], *, timeout_s: float = 10.0, secrets: dict[str, str] | None = None
) -> bool:
    """Start `cmd` detached; True when the launcher started it. `secrets` are added to its
    environment (never to its command line)."""
    env = {**os.environ, **(secrets or {})}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        result = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, *cmd],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("memory: could not start the reflection: %s", exc)
        return False
    if result.returncode != 0:
        log.warning("memory: the reflection launcher failed: %s", result.stderr[-400:])
        return False
    return True
