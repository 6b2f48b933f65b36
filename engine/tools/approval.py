"""Asking before anything changes: who decides whether a write or a command may happen.

`write_file`, `edit_file` and `run_command` never act without a decision of allow. The
desktop answers with a dialog, headless runs with `--approve deny` (the default) or
`--approve auto`. The request carries exactly what will run or change (the command line and
folder, the diff or the whole new file) so the person decides on the real thing, not on a
description the model wrote.

"Always for this conversation" is remembered by `ConversationApprover`, keyed by what the
request says "always" covers (`always_key`): every file edit in this workspace, or one exact
command line. A command is never remembered by its program name alone, since
`git status; rm -rf ~` starts with `git` too.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger(__name__)


class Decision(enum.StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"  # allow, and do not ask again for this always_key
    DENY = "deny"

    @property
    def allows(self) -> bool:
        return self is not Decision.DENY


@dataclass(frozen=True)
class ApprovalRequest:
    tool: str
    summary: str  # one line: "Run a command in /work/project", "Edit src/app.py"
    detail: str  # exactly what will run or change
    always_key: str  # what "always" remembers: "files:write" or "command:<cwd>\0<line>"
    always_label: str = ""  # what "always" means, for the dialog's button or tooltip


class Approver(Protocol):
    async def approve(self, request: ApprovalRequest) -> Decision: ...


class DenyAll:
    """The headless default: nothing that changes the machine runs unattended."""

    async def approve(self, request: ApprovalRequest) -> Decision:
        return Decision.DENY


class AutoApprove:
    """`--approve auto`: the person running headless has accepted every action up front."""

    async def approve(self, request: ApprovalRequest) -> Decision:
        return Decision.ALLOW_ONCE


@dataclass
class ConversationApprover:
    """Wraps another approver and remembers its "always" answers for one conversation.

    Make one per conversation; a new conversation asks again."""

    inner: Approver
    remembered: set[str] = field(default_factory=set)

    async def approve(self, request: ApprovalRequest) -> Decision:
        if request.always_key in self.remembered:
            return Decision.ALLOW_ALWAYS
        decision = await self.inner.approve(request)
        if decision is Decision.ALLOW_ALWAYS:
            self.remembered.add(request.always_key)
        return decision

    def forget(self) -> None:
        self.remembered.clear()
