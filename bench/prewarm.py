"""A new web process's first lookups with the OS cache cold, with and without the prewarm a
starting web process runs (search.warm: the SQLite file read into the OS page cache).

    sudo .venv/bin/python bench/prewarm.py                 # 1,000,000 messages, 2 rounds
    .venv/bin/python bench/prewarm.py --size 100000 --rounds 3
    .venv/bin/python bench/prewarm.py --idle 90            # after 90 s idle: held mapped or not

Loads bench/search.py's corpus (the 240 rare facts in 12 kinds among common text) into a fresh
SQLite file and builds its indexes. Then, alternating, each round: the OS cache is dropped
(``/proc/sys/vm/drop_caches``: the state after a reboot, or of a file the OS evicted), and a
fresh process -- as a web process -- starts, prewarms or not, pauses a second as a web process
does before its first request, answers bench/search.py's four warm-up queries, then each fact's
first lookup within one channel (20 hits, windows of 2). The table puts the two side by side;
the ratio is without / with. Dropping the OS cache needs root: elsewhere the command says so and
stops.

``--idle SECONDS`` measures what the prewarm leaves after an idle pause instead. Both processes
prewarm, wait that long, and then answer the same lookups. One holds the file mapped after reading
it, as a web process does (search.warm.hold_mapped); the other, the baseline, does not. A kernel
that reclaims cold file pages no process maps (this machine kind pages them out after a minute
untouched) takes the second's pages meanwhile. The OS cache is not dropped in this mode.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import percentile  # noqa: E402 - after the path

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
PAUSE_SECONDS = 1.0  # between a web process's start (its warm-up) and its first request


def _drop_os_cache() -> None:
    os.sync()  # dirty pages cannot be dropped: written out first
    DROP_CACHES.write_text("1\n")


def child(data: Path, prewarm: bool, idle: float = 0.0, hold: bool = True) -> None:
    """One fresh process's first lookups, as JSON on stdout: {kind: [ms, ...]}. ``idle``: a
    pause after the start's one; ``hold``: whether the prewarm holds the file mapped."""
    from bench import search as corpus

    corpus._setup(data)
    from django.db import connection

    from search import ranked, warm
    from search.filters import Filters
    from search.service import search
    from sessions_app.models import Channel

    read_seconds: list[float] = []
    prewarm_file = warm.prewarm_file

    def timed(path: Path, cap_mib: int) -> bool:  # the read's own time, in its thread
        began = time.perf_counter()
        try:
            return prewarm_file(path, cap_mib)
        finally:
            read_seconds.append(time.perf_counter() - began)

    warm.prewarm_file = timed
    if not hold:
        warm.hold_mapped = lambda fd, path, size: False  # the prewarm as it was before the hold
    started = time.perf_counter()
    thread = warm.warm_up(close=False) if prewarm else None
    if thread is not None:  # the prewarm's own thread: done reading within the pause, or not
        thread.join(PAUSE_SECONDS)
    time.sleep(max(0.0, PAUSE_SECONDS - (time.perf_counter() - started)))
    if thread is not None and idle:
        thread.join()
    time.sleep(idle)
    api = Filters(channel_id=Channel.objects.order_by("pk").values_list("pk", flat=True)[0])
    for q in corpus.WARM_UP:
        search(q, api, limit=20, window=2)
    out: dict[str, list[float]] = {}
    for kind, facts in corpus.FACTS.items():
        for _, q in facts:
            result = search(q, api, limit=20, window=2)
            out.setdefault(kind, []).append(result.total_seconds * 1000)
    if thread is not None:  # the read may go on past the pause and the lookups
        thread.join()
    warmed = read_seconds[0] if read_seconds else 0.0
    ranked.drain(30)
    connection.close()
    print(json.dumps({"warm_up_ms": warmed * 1000, "kinds": out}))


def _read_ahead_kb(data: Path) -> str:
    """The read-ahead of the device under ``data`` (what a WILLNEED reads at most), if known."""
    dev = os.stat(data).st_dev
    try:
        kb = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/queue/read_ahead_kb")
        if not kb.exists():
            kb = Path(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb")
        return f"{int(kb.read_text())} KiB"
    except (OSError, ValueError):
        return "unknown"


def _build(data: Path, size: int) -> None:
    from django.db import connection

    from bench import search as corpus

    corpus.build_sqlite_corpus(data, size)
    connection.close()


def _child_env() -> dict[str, str]:
    """The children's environment: the embedded default, whatever database the shell names."""
    return {k: v for k, v in os.environ.items() if k != "HERMES_DATABASE_URL"}


def _build_in_child(data: Path, size: int) -> None:
    build = [sys.executable, __file__, "--child", str(data), "--build", str(size)]
    subprocess.run(build, check=True, env=_child_env())


def _run_child(data: Path, prewarm: bool, idle: float = 0.0, hold: bool = True) -> dict:
    env = _child_env()
    args = [sys.executable, __file__, "--child", str(data)] + (["--prewarm"] if prewarm else [])
    args += ["--idle", str(idle)] + ([] if hold else ["--no-hold"])
    done = subprocess.run(args, check=True, env=env, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--idle",
        type=float,
        default=0.0,
        help="seconds idle before the lookups: compares the prewarm held mapped and not",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--no-hold", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prewarm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.build:
        _build(args.child, args.build)
        return
    if args.child:
        child(args.child, args.prewarm, args.idle, not args.no_hold)
        return
    if args.idle:
        idle(args.size, args.rounds, args.idle)
        return
    if not os.access(DROP_CACHES, os.W_OK):
        raise SystemExit(f"{DROP_CACHES} is not writable: dropping the OS cache needs root")
    with tempfile.TemporaryDirectory(prefix="hermes-prewarm-bench-") as tmp:
        data = Path(tmp)
        _build_in_child(data, args.size)
        read_ahead = _read_ahead_kb(data)
        samples: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
        warm_ms: list[float] = []
        for _ in range(args.rounds):
            for prewarm in (False, True):
                _drop_os_cache()
                found = _run_child(data, prewarm)
                if prewarm:
                    warm_ms.append(found["warm_up_ms"])
                for kind, ms in found["kinds"].items():
                    samples[prewarm].setdefault(kind, []).extend(ms)
    print(
        f"\nFirst lookups of the rare facts in a new process, the OS cache dropped before each "
        f"({args.rounds} rounds, alternated; the device's read-ahead {read_ahead}; "
        f"the prewarm's thread read the file in {min(warm_ms):.0f}-{max(warm_ms):.0f} ms "
        f"from its start, the lookups starting {PAUSE_SECONDS * 1000:.0f} ms after it):\n"
    )
    print(
        "| query kind | without p50 ms | without p95 ms | with p50 ms | with p95 ms "
        "| p95 without / with (x) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    everything: dict[bool, list[float]] = {False: [], True: []}
    for kind in samples[False]:
        cells = []
        for prewarm in (False, True):
            ms = samples[prewarm][kind]
            everything[prewarm] += ms
            cells.append(f"{percentile(ms, 0.5):.2f} | {percentile(ms, 0.95):.2f}")
        ratio = percentile(samples[False][kind], 0.95) / percentile(samples[True][kind], 0.95)
        print(f"| {kind} | {' | '.join(cells)} | {ratio:.1f} |")
    a, b = everything[False], everything[True]
    print(
        f"| all 12 kinds | {percentile(a, 0.5):.2f} | {percentile(a, 0.95):.2f} "
        f"| {percentile(b, 0.5):.2f} | {percentile(b, 0.95):.2f} "
        f"| {percentile(a, 0.95) / percentile(b, 0.95):.1f} |"
    )


def idle(size: int, rounds: int, seconds: float) -> None:
    """Both processes prewarm, wait ``seconds``, then look up: held mapped (as shipped) against
    not held (the baseline), alternated, each round on a fresh process."""
    with tempfile.TemporaryDirectory(prefix="hermes-prewarm-bench-") as tmp:
        data = Path(tmp)
        _build_in_child(data, size)
        samples: dict[bool, list[float]] = {False: [], True: []}
        for n in range(rounds):
            for hold in (True, False) if n % 2 else (False, True):
                found = _run_child(data, True, seconds, hold)
                samples[hold] += [ms for kind in found["kinds"].values() for ms in kind]
    print(
        f"\nFirst lookups of the rare facts (all 12 kinds, 240 per process) in a new process that "
        f"prewarmed and then stayed idle {seconds:g} s ({rounds} rounds, alternated):\n"
    )
    print("| the prewarmed file | p50 ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for hold, name in ((False, "not held (baseline)"), (True, "held mapped (shipped)")):
        ms = samples[hold]
        cells = " | ".join(f"{percentile(ms, q):.2f}" for q in (0.5, 0.95, 0.99))
        print(f"| {name} | {cells} |")
    a, b = samples[False], samples[True]
    print(
        f"\np95 not held / held: {percentile(a, 0.95) / percentile(b, 0.95):.2f}x; "
        f"p50: {percentile(a, 0.5) / percentile(b, 0.5):.2f}x"
    )


if __name__ == "__main__":
    main()
