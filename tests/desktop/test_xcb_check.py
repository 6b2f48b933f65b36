"""Brim's own start-up check names the X11 libraries that are really missing."""

from __future__ import annotations

import pytest

from desktop import xcb_check
from desktop.xcb_check import missing_libraries, package_for, uses_xcb, xcb_problem

# What `ldd libqxcb.so` printed on a machine where the window would not open.
LDD = """\
\tlinux-vdso.so.1 (0x00007ffc)
\tlibQt6XcbQpa.so.6 => /opt/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f89)
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f89)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxkbcommon-x11.so.0 => not found
\tlibxcb-icccm.so.4 => not found
"""


def test_the_missing_libraries_are_the_ones_the_loader_could_not_find():
    missing = missing_libraries(LDD)
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0"]
    assert [package_for(name) for name in missing] == [
        "libxcb-icccm4",
        "libxcb-keysyms1",
        "libxkbcommon-x11-0",
    ]


def test_the_message_names_the_missing_packages_not_qts_guess(monkeypatch, tmp_path):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")
    ldd = tmp_path / "ldd"
    ldd.write_text(f"#!/bin/sh\ncat <<'END'\n{LDD}END\n")
    ldd.chmod(0o755)
    monkeypatch.setattr(xcb_check, "xcb_plugin", lambda: plugin)
    monkeypatch.setattr(xcb_check.shutil, "which", lambda _name: str(ldd))
    problem = xcb_problem({"DISPLAY": ":0"})
    assert problem is not None
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0" in problem
    assert "libxcb-cursor0" not in problem  # present: not blamed


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"DISPLAY": ":0"}, True),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, False),
        ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, False),
        ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "w", "QT_QPA_PLATFORM": "xcb"}, True),
        ({}, False),
    ],
)
def test_the_check_runs_only_where_qt_will_load_its_x11_plugin(env, expected):
    assert uses_xcb(env) is expected


def test_on_a_machine_with_every_library_nothing_is_said():
    assert xcb_problem({"DISPLAY": ":0"}) is None
