"""Fixtures for the memory tests: a memory root under tmp_path and its service."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from engine.memory import MemoryService


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    return MemoryService(tmp_path / "memory")


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under `root` (relative path -> hash of its bytes): byte-identity."""
    if not root.exists():
        return {}
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_symlink():
            out[path.relative_to(root).as_posix()] = "link:" + str(path.readlink())
    return out
