"""Shared by the benchmarks: a median timer, a percentile and a fresh service on a temporary data
folder."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
import uuid
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


def free_port() -> int:
    """A port on loopback that nothing listens on (for a server the bench starts)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(samples: list[float], q: float) -> float:
    """The sample at fraction ``q`` of the sorted samples (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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


def run_on_scratch_postgres(command: list[str], env: dict[str, str], url: str, name: str) -> None:
    """Run ``command`` with HERMES_DATABASE_URL at a new database on the server of ``url``
    (named ``name`` and a random suffix), dropped afterwards whatever happened."""
    from tests.processes import _admin_connection

    database = f"{name}_{uuid.uuid4().hex[:8]}"
    with _admin_connection(url) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    try:
        env = {**env, "HERMES_DATABASE_URL": url.rsplit("/", 1)[0] + f"/{database}"}
        subprocess.run(command, check=True, env=env)
    finally:
        with _admin_connection(url) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
