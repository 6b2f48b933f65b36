"""How much of the prompt an engine read from its cache: for the session, and for the last
request. A share is data; the rail and `/context` show it, and say when it is worth alarm."""

from __future__ import annotations

from dataclasses import dataclass

from engine.report.figures import format_tokens


@dataclass(frozen=True)
class CacheShare:
    """Cached prompt tokens against prompt tokens (for the session: over every request sent).
    `reported` False: the engine said nothing about its cache (not the same as 0). `first`:
    the session's first request, which nothing sent before could have cached."""

    cached: int
    prompt: int
    reported: bool
    first: bool = False

    @property
    def percent(self) -> float | None:
        if not self.reported or self.prompt <= 0:
            return None
        return 100.0 * self.cached / self.prompt

    @property
    def alarm(self) -> bool:
        """A reported zero where a cache could have helped: the cache was cold (shown in the
        alarm colour). On a first request a zero is what every engine reports."""
        return self.reported and self.cached == 0 and not self.first

    def describe(self) -> str:
        if not self.reported:
            return "not reported"
        percent = self.percent
        share = f"{round(percent)}%" if percent is not None else "0%"
        if self.first and not self.cached:
            return f"{format_tokens(self.cached)} read (first request: nothing to reuse yet)"
        return f"{format_tokens(self.cached)} read ({share} of prompt)"
