"""Reading the test database while a server or worker thread of the same process writes it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError

T = TypeVar("T")


def unlocked(read: Callable[[], T], seconds: float = 10) -> T:
    """The test database is SQLite's shared-cache memory database, where a table another
    connection is writing answers "locked" at once instead of waiting out the busy timeout: so
    wait for it here, and only for that."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return read()
        except OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
