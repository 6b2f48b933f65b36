"""Which system libraries Qt's X11 platform plugin lacks, named before Qt fails.

Without them Qt aborts with "could not load the Qt platform plugin xcb" and names
`libxcb-cursor0` whatever is really missing. The dynamic loader knows exactly what is: `ldd`
on the plugin lists each library it cannot find, and each is named with the Debian/Ubuntu
package that ships it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)
SONAME = re.compile(r"^lib(?P<name>.+?)\.so\.(?P<version>\d+)")


def uses_xcb(env: Mapping[str, str]) -> bool:
    """Qt will load its X11 plugin: an X display, no Wayland one, no other platform asked."""
    platform = env.get("QT_QPA_PLATFORM", "")
    if platform and not platform.startswith("xcb"):
        return False
    return bool(env.get("DISPLAY")) and (
        platform.startswith("xcb") or not env.get("WAYLAND_DISPLAY")
    )


def missing_libraries(ldd_output: str) -> list[str]:
    """The sonames `ldd` could not find, in its order, each once."""
    seen: list[str] = []
    for name in NOT_FOUND.findall(ldd_output):
        if name not in seen:
            seen.append(name)
    return seen


def package_for(soname: str) -> str:
    """The Debian package that ships `soname`: libxcb-icccm.so.4 → libxcb-icccm4,
    libxkbcommon-x11.so.0 → libxkbcommon-x11-0 (a dash when the name ends in a digit)."""
    match = SONAME.match(soname)
    if match is None:
        return soname
    name, version = match["name"].lower(), match["version"]
    return f"lib{name}{'-' if name[-1].isdigit() else ''}{version}"


def xcb_plugin() -> Path | None:
    from PySide6.QtCore import QLibraryInfo

    plugins = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))
    plugin = plugins / "platforms" / "libqxcb.so"
    return plugin if plugin.exists() else None


def xcb_problem(env: Mapping[str, str]) -> str | None:
    """Why the window cannot open on this X display, naming the missing libraries; None when
    nothing is missing (or it cannot be told: Qt then speaks for itself)."""
    if not sys.platform.startswith("linux") or not uses_xcb(env):
        return None
    ldd = shutil.which("ldd")
    plugin = xcb_plugin()
    if ldd is None or plugin is None:
        return None
    try:
        result = subprocess.run(
            [ldd, str(plugin)], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    missing = missing_libraries(result.stdout)
    if not missing:
        return None
    packages = " ".join(dict.fromkeys(package_for(name) for name in missing))
    return (
        f"brim: the window cannot open on this X display: Qt's X11 plugin needs "
        f"{', '.join(missing)}, which this system lacks.\n"
        f"On Debian or Ubuntu: sudo apt-get install {packages}\n"
        "Or use `brim chat --headless` in a terminal."
    )
