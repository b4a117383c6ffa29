"""Shared by the benchmarks: a median timer and a fresh service on a temporary data folder."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def median_us(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs, in microseconds."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def setup_service(data_dir: Path) -> None:
    """Django on a fresh embedded store in ``data_dir`` (the service's own settings), migrated."""
    config = data_dir / "hermes.yaml"
    config.write_text(f"server:\n  data_dir: {data_dir}\n", encoding="utf-8")
    os.environ["HERMES_CONFIG"] = str(config)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
