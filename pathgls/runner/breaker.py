"""The subject circuit breaker: a subject that keeps failing is skipped for the rest of a run.

A subject whose *original* report failed on ``limit`` items in a row (a dead endpoint, a model
that never loads its weights) is not asked again by this worker: its next items fail at once
with the reason, so it does not cost its timeout on every item; a rerun tries it again. Each
worker (the local executor, each Ray actor) has its own breaker; the models it shares with
other runs hold no such state.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GenerationFailure:
    """A subject produced no original report for an item (so nothing of it could be scored)."""

    subject: str
    item_id: str
    error: str  # the generation's error, first line first

    @property
    def first_line(self) -> str:
        """The error's first line."""
        return self.error.splitlines()[0] if self.error else ""


@dataclass
class SubjectBreaker:
    """Counts each subject's consecutive items without an original report.

    Attributes:
        limit: Failures in a row after which a subject is skipped; 0 never skips.
    """

    limit: int
    _failures: dict[str, list[GenerationFailure]] = field(default_factory=dict)

    def open_reason(self, subject: str) -> str | None:
        """Why ``subject`` is skipped now, or None when it may be asked."""
        failures = self._failures.get(subject, [])
        if not self.limit or len(failures) < self.limit:
            return None
        return (
            f"subject skipped: its original report failed on the last {len(failures)} items "
            f"(last error: {failures[-1].first_line}); rerun to try it again"
        )

    def record(self, subject: str, *, failure: GenerationFailure | None, scored: bool) -> None:
        """Note one item's outcome: a failure adds to the count, a scored report resets it."""
        if failure is not None:
            self._failures.setdefault(subject, []).append(failure)
        elif scored:
            self._failures.pop(subject, None)
