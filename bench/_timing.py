"""Shared by the benchmarks: a median timer."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_us(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs, in microseconds."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6
