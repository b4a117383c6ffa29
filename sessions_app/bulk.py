"""Writing rows in bulk that already have their times (a copy, an import)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import models


@contextmanager
def keeping_timestamps(plan: list[type[models.Model]]) -> Iterator[None]:
    """``auto_now`` / ``auto_now_add`` would stamp every written row with the time of the write;
    the guards (cooldown, anti-thrash windows, idle sweep) and the timeline need the originals.
    Changes the model fields for this process while the block runs: for commands, not requests."""
    changed: list[tuple[models.DateField | models.TimeField, bool, bool]] = []
    for model in plan:
        for field in model._meta.concrete_fields:
            # Django's fields with auto_now / auto_now_add (DateTimeField is a DateField).
            if not isinstance(field, models.DateField | models.TimeField):
                continue
            if field.auto_now or field.auto_now_add:
                changed.append((field, field.auto_now, field.auto_now_add))
                field.auto_now = field.auto_now_add = False
    try:
        yield
    finally:
        for field, auto_now, auto_now_add in changed:
            field.auto_now, field.auto_now_add = auto_now, auto_now_add
