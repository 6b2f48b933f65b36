"""The `brim` command line, one module a command: `main` parses and dispatches, `probe`,
`chat` (over `stdio`), `conversations`, `memory` (with `review`, and `reflect` for reflect
and learn); `arguments` and `agents` are what several commands share.

`engine.cli.main` is the entry point the launcher calls (the function: it is bound here
over the submodule of the same name); `python -m engine.cli` runs it too.
"""

from engine.cli.errors import CliError
from engine.cli.main import build_parser, main

__all__ = ["CliError", "build_parser", "main"]
