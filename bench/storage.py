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


APPENDER = """
import sys, time, django
django.setup()
from sessions_app import services
from sessions_app.keys import create_channel
from sessions_app.models import Channel
channel = Channel.objects.filter(name="bench-appends").first() or create_channel("bench-appends")[0]
session = services.open_session(channel, model="gpt-4o", external_id=sys.argv[1]).session
count, stop = int(sys.argv[2]), sys.argv[3]
import os
waits, i = [], 0
while (count and i < count) or (not count and not os.path.exists(stop)):
    t0 = time.perf_counter()
    services.append_messages(session, [{"role": "user", "content": f"appended deploy {i}"}])
    waits.append(time.perf_counter() - t0)
    i += 1
waits.sort()
print(f"{len(waits)} appends, p50 {waits[len(waits) // 2] * 1000:.1f} ms, "
      f"max {waits[-1] * 1000:.0f} ms")
"""


def appends(env: dict[str, str], name: str, count: int, stop: Path) -> subprocess.Popen:
    """Appends through the service, one message a transaction (``count`` of them, or until
    ``stop`` exists); prints how long each waited."""
    return subprocess.Popen(
        [sys.executable, "-c", APPENDER, name, str(count), str(stop)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


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
    parser.add_argument(
        "--fragment",
        type=int,
        default=5_000,
        help="appends, one a transaction, before optimize (each adds FTS5 segments to merge)",
    )
    options = parser.parse_args()
    data = options.data.absolute()
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "hermes.sqlite3").exists():
        generate(options.size, data)
    if options.generate_only:
        return
    env = {
        **os.environ,
        "HERMES_CONFIG": str(data / "hermes.yaml"),
        "DJANGO_SETTINGS_MODULE": "hermes_site.settings",
    }
    env.pop("HERMES_DATABASE_URL", None)
    results = {"storage": timed(env, "storage")}
    results["storage --json"] = timed(env, "storage", "--json")
    stop = data / "bench.stop"
    stop.unlink(missing_ok=True)
    if options.fragment:
        fragment = appends(env, f"fragment-{time.time():.0f}", options.fragment, stop)
        print("fragmenting:", fragment.communicate()[0].strip())
    # optimize while a gateway appends: how long do the appends wait for the merges?
    writer = appends(env, f"during-{time.time():.0f}", 0, stop)
    results["optimize"] = timed(env, "optimize", "--no-progress")
    stop.touch()
    print("appends during optimize:", writer.communicate()[0].strip())
    stop.unlink()
    backup = data / "bench.backup"
    backup.unlink(missing_ok=True)
    # ...and a backup while a gateway appends: a reader in WAL mode never blocks the writer.
    writer = appends(env, f"backup-{time.time():.0f}", 0, stop)
    results["backup"] = timed(env, "backup", str(backup), "--no-progress")
    stop.touch()
    print("appends during backup:", writer.communicate()[0].strip())
    stop.unlink()
    backup.unlink(missing_ok=True)
    for name, seconds in results.items():
        print(f"{name:>16}: {seconds:6.1f} s")


if __name__ == "__main__":
    main()
