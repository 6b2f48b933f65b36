"""The bundle's entry point: `brim` as an installed application.

Brim starts helper processes as `sys.executable -m MODULE ...` (the embedded engine's child,
engine/providers/embedded.py; the memory reflection, engine/memory/spawn.py) and
`sys.executable -c CODE ...` (the reflection's detaching launcher). In the bundle
`sys.executable` is this program, not a Python interpreter, so it answers to those two forms
the way `python` would. Everything else is the `brim` command line (launcher/, then
engine/cli/), so the unfrozen code paths stay exactly as they are.

The bootloader points LD_LIBRARY_PATH at the bundle's own libraries; the user's commands
(run_command, a detached reflection's own children) must see the system's, so the original
value is put back before anything is started. The dynamic loader read the variable when this
process began, so the bundle itself is unaffected.
"""

from __future__ import annotations

import os
import runpy
import sys


def _restore_library_path() -> None:
    """Give child processes the library path the user had, not the bundle's.

    The bootloader keeps the user's value in LD_LIBRARY_PATH_ORIG when there was one and
    otherwise just puts the bundle's folder first. A process that the bundle started from
    itself (the embedded child) is left as it was, with the user's value, so only the
    bundle's own folder is ever taken out."""
    bundle_dir = getattr(sys, "_MEIPASS", None)
    if not getattr(sys, "frozen", False) or bundle_dir is None:
        return
    for name in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"):
        original = os.environ.pop(f"{name}_ORIG", None)
        if original is not None:
            os.environ[name] = original
            continue
        parts = os.environ.get(name, "").split(os.pathsep)
        if parts[0] == bundle_dir:
            rest = os.pathsep.join(parts[1:])
            if rest:
                os.environ[name] = rest
            else:
                del os.environ[name]


def _as_interpreter(argv: list[str]) -> int | None:
    """Run `-m MODULE args` or `-c CODE args` as `python` would; None for anything else."""
    if len(argv) < 3 or argv[1] not in ("-m", "-c"):
        return None
    flag, target, rest = argv[1], argv[2], argv[3:]
    if flag == "-m":
        sys.argv = [target, *rest]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *rest]
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
    return 0


def main() -> int:
    _restore_library_path()
    code = _as_interpreter(sys.argv)
    if code is not None:
        return code
    from launcher import main as launcher_main

    return launcher_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
