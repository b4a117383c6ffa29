"""The storage upkeep commands at size: ``storage``, ``optimize`` and ``backup`` timed on a
generated store (bench/search.py's corpus: four channels, 1 in 4 rows archived).

    .venv/bin/python bench/storage.py --size 1000000 --data /tmp/hermes-1m   # SQLite

The store is generated once into ``--data`` (kept, so the commands can be timed again) and each
command runs as an operator runs it, in its own process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def generate(size: int, data: Path) -> None:
    from bench import search as corpus

    corpus._setup(data)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    corpus.load(size)
    built = corpus._build_indexes(size)
    print(f"generated {size:,} messages and {built} in {time.perf_counter() - t0:.0f} s")


def timed(env: dict[str, str], *args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=sys.stdout
    )
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--generate-only", action="store_true")
    options = parser.parse_args()
    data = options.data.absolute()
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "hermes.sqlite3").exists():
        generate(options.size, data)
    if options.generate_only:
        return
    env = {**os.environ, "HERMES_CONFIG": str(data / "hermes.yaml")}
    env.pop("HERMES_DATABASE_URL", None)
    results = {"storage": timed(env, "storage")}
    results["storage --json"] = timed(env, "storage", "--json")
    results["optimize"] = timed(env, "optimize")
    backup = data / "bench.backup"
    backup.unlink(missing_ok=True)
    results["backup"] = timed(env, "backup", str(backup), "--no-progress")
    backup.unlink(missing_ok=True)
    for name, seconds in results.items():
        print(f"{name:>16}: {seconds:6.1f} s")


if __name__ == "__main__":
    main()
