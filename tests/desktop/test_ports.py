"""The window offers every intent and signal its ports promise the desks, as they say it
(mypy does not read desktop/, so this is the check that `MainWindow` fits each port)."""

from __future__ import annotations

import inspect

import pytest
from PySide6.QtCore import Signal

from desktop import ports
from desktop.main_window import MainWindow

PORTS = [
    value
    for value in vars(ports).values()
    if isinstance(value, type) and getattr(value, "_is_protocol", False)
]


def _members(port: type) -> dict[str, object]:
    found: dict[str, object] = {}
    for cls in reversed(port.__mro__):
        if getattr(cls, "_is_protocol", False) and cls.__module__ == ports.__name__:
            found.update({k: v for k, v in vars(cls).items() if not k.startswith("_")})
    return found


def _shape(function: object) -> list[tuple[str, object, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    shape = [(p.name, p.kind, p.default, p.annotation) for p in signature.parameters.values()]
    return [*shape, ("return", None, None, signature.return_annotation)]


def test_the_ports_are_found():
    assert {p.__name__ for p in PORTS} >= {"NavigatorWindow", "MemoryWindow", "DraftsWindow"}


@pytest.mark.parametrize("port", PORTS, ids=lambda port: port.__name__)
def test_the_window_fits_the_port(port: type):
    for name, member in _members(port).items():
        offered = getattr(MainWindow, name, None)
        if isinstance(member, property):
            assert isinstance(offered, Signal), f"{port.__name__}.{name}: not a signal"
        else:
            assert callable(offered), f"{port.__name__}.{name}: not offered"
            assert _shape(offered) == _shape(member), f"{port.__name__}.{name}"
