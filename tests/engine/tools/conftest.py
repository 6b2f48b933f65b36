"""A real workspace on disk, a folder outside it, and approvers that answer as scripted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.context.work_state import WorkState
from engine.tools import ApprovalRequest, Decision, ToolContext, default_registry


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspace, holding a secret the tools must never reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("the secret\n", encoding="utf-8")
    return folder


@dataclass
class ScriptedApprover:
    """Answers every request with `answer` and keeps what it was asked."""

    answer: Decision = Decision.ALLOW_ONCE
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def approve(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.answer


@pytest.fixture
def make_ctx(workspace: Path, tmp_path: Path) -> Callable[..., ToolContext]:
    def make(**overrides: object) -> ToolContext:
        values: dict[str, object] = {
            "workspace": workspace,
            "tool_results_dir": tmp_path / "work" / "tool-results",
            "work_state": WorkState(tmp_path / "work" / "state.json"),
            "approver": ScriptedApprover(),
        }
        values.update(overrides)
        return ToolContext(**values)  # type: ignore[arg-type]

    return make


@pytest.fixture
def registry():
    return default_registry()
