"""The guards that hold a session back, as they stand at a moment: one reading for the console,
the admin and the API, so a guard whose time has passed is shown as over everywhere."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone


@dataclass(frozen=True)
class Guards:
    compressing: bool
    cooling_until: datetime | None  # None: no cooldown now (never set, or passed)
    locked_until: datetime | None  # the anti-thrash lock, likewise
    failure_streak: int
    cooldown_ended: datetime | None  # a cooldown that has passed (shown as over, if at all)
    lock_ended: datetime | None

    @property
    def holding(self) -> bool:
        return bool(self.cooling_until or self.locked_until)

    def describe(self) -> str:
        """One line for a page: what holds it now, then what has passed; "" for nothing."""
        parts = []
        if self.compressing:
            parts.append("compressing")
        if self.cooling_until:
            parts.append(f"cooldown until {_at(self.cooling_until)}")
        if self.locked_until:
            parts.append(f"anti-thrash lock until {_at(self.locked_until)}")
        if self.failure_streak:
            n = self.failure_streak
            parts.append(f"{n} failure{'s' if n != 1 else ''} in a row")
        return ", ".join(parts)


def guards_of(session, now: datetime | None = None) -> Guards:
    now = now or timezone.now()

    def holds(until: datetime | None) -> datetime | None:
        return until if until is not None and until > now else None

    def ended(until: datetime | None) -> datetime | None:
        return until if until is not None and until <= now else None

    return Guards(
        compressing=holds(session.compressing_until) is not None,
        cooling_until=holds(session.cooldown_until),
        locked_until=holds(session.thrash_lock_until),
        failure_streak=session.failure_streak,
        cooldown_ended=ended(session.cooldown_until),
        lock_ended=ended(session.thrash_lock_until),
    )


def _at(when: datetime) -> str:
    local = timezone.localtime(when)
    return f"{local:%H:%M}" if local.date() == timezone.localdate() else f"{local:%Y-%m-%d %H:%M}"
