"""What can go wrong in the context area. Compaction and trimming never raise for an
ordinary failure (they report it in their results); only the work-state files do.

    ContextError
     └── WorkStateError     state.json or a patch to it is not what it should be
"""

from __future__ import annotations


class ContextError(Exception):
    """Base of the context area's errors."""


class WorkStateError(ContextError):
    """A work-state patch was malformed, or state.json could not be read as an object."""
