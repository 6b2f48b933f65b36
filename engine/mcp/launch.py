"""How a stdio MCP server is started so that it never outlives Brim.

The SDK starts the server in a session of its own (so its whole group is killed on close);
in front of it Brim puts a two-line Python guard that asks Linux for SIGKILL when its
parent dies (PR_SET_PDEATHSIG, kept across the exec) and then becomes the server. A Brim
killed outright (SIGKILL, no chance to close anything) so takes its servers along, even one
that ignores its closed stdin.
"""

from __future__ import annotations

import os
import sys

from mcp.client.stdio import StdioServerParameters

from engine.config.mcp_servers import McpServer

# argv[1]: Brim's pid (a parent that died before the request took effect is noticed);
# argv[2:]: the server's command line, exec'd in place of the guard.
_GUARD = """
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
except (AttributeError, OSError):
    pass
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"cannot start {sys.argv[2]}: {exc.strerror}\\n")
    os._exit(127)
"""


def stdio_parameters(server: McpServer, cwd: str | None = None) -> StdioServerParameters:
    """The SDK's parameters for `server`: its command behind the guard on Linux, `~` in its
    arguments expanded, its own `env` over the SDK's short list of inherited variables (so
    Brim's engine keys never reach it)."""
    command = [os.path.expanduser(part) for part in server.command]
    env = dict(server.env)
    if sys.platform.startswith("linux"):
        return StdioServerParameters(
            command=sys.executable,
            args=["-I", "-c", _GUARD, str(os.getpid()), *command],
            env=env or None,
            cwd=cwd,
        )
    return StdioServerParameters(command=command[0], args=command[1:], env=env or None, cwd=cwd)
