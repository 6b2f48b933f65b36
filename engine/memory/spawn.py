"""The detached `brim memory reflect` a chat starts when it closes a conversation.

Neither the person nor the chat waits on it: a short-lived launcher starts the reflection
in a new session and exits at once, so the reflection is nobody's child (no zombie, no
"still running" warning in the chat's process) and survives the chat's exit.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)

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


def reflect_command(
    conversation_id: str | list[str],
    *,
    data_dir: Path | None,
    provider: str,
    base_url: str | None,
    model: str,
    summarizer_model: str | None,
    num_ctx: int | None,
    workspace: Path | None,
    api_key_env: str | None = None,
) -> list[str]:
    """The reflection's command line. It holds no secret (anyone can read it in `ps`): an
    API key travels in the child's environment, and the line only names the variable."""
    cmd = [sys.executable, "-m", "engine.cli"]
    if data_dir is not None:
        cmd += ["--data-dir", str(data_dir)]
    ids = [conversation_id] if isinstance(conversation_id, str) else conversation_id
    cmd += ["memory", "reflect"]
    for one in ids:
        cmd += ["--conversation", one]
    cmd += ["--provider", provider]
    if base_url:
        cmd += ["--base-url", base_url]
    if model:
        cmd += ["--model", model]
    if summarizer_model:
        cmd += ["--summarizer-model", summarizer_model]
    if num_ctx:
        cmd += ["--num-ctx", str(num_ctx)]
    if api_key_env:
        cmd += ["--api-key-env", api_key_env]
    if workspace is not None:
        cmd += ["--workspace", str(workspace)]
    return cmd


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
