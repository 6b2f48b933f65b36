"""What the command line ends with: the exit statuses scripts rely on, and the one error a
person can fix from the command line."""

from __future__ import annotations

EXIT_UNREACHABLE = 2
EXIT_USAGE = 64
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl+C
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE: whoever read stdout went away (`| head -1`)


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 64."""
