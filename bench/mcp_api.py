"""What a search costs through MCP, beside the same search through the JSON API, over HTTP.

    .venv/bin/python bench/mcp_api.py                  # 100,000 messages, 300 rounds
    .venv/bin/python bench/mcp_api.py --messages 1000000 --rounds 500

In a fresh SQLite file: the search benchmark's corpus (bench/search.py: four channels, one in
four rows archived, the FTS5 indexes built), then the service as deployed (``manage.py serve``:
gunicorn with its own configuration, and the worker). Each round runs one query twice, in
turn -- ``GET /api/v1/search`` and the MCP ``search`` tool (``POST /mcp``, a stateless
``tools/call`` as an MCP client sends it after the handshake) -- with the same channel key, the
same 10 hits and windows of 2; a new connection each time, as gunicorn's sync workers close
each. The baseline is the API's search, measured in the same run; the target is an MCP p95 at
most 1.5 times the API's. The first ``--warmup`` rounds are not counted (the first MCP request
of a process starts the SDK's event loop).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import free_port  # noqa: E402
from bench.search import (  # noqa: E402
    EN_LEXICON,
    HEAD_ZH,
    NEEDLES,
    _build_indexes,
    _setup,
    load,
    percentile,
)


def _request(port: int, method: str, path: str, key: str, body: bytes | None = None) -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers |= {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {data[:300]!r}")
    return data


def _queries(rng: random.Random, n: int) -> list[str]:
    pool = EN_LEXICON[:120] + EN_LEXICON[200:400] + HEAD_ZH + NEEDLES
    return [rng.choice(pool) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    _setup(data)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    load(args.messages)
    built = _build_indexes(args.messages)
    print(
        f"loaded {args.messages:,} messages, built {built} in {time.perf_counter() - started:.0f} s"
    )
    from sessions_app.keys import issue_key
    from sessions_app.models import Channel

    key = issue_key(Channel.objects.order_by("pk").first()).plaintext  # type: ignore[arg-type]
    port = free_port()
    env = {**os.environ, "HERMES_ADDR": f"127.0.0.1:{port}"}
    env.pop("HERMES_DATABASE_URL", None)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--no-migrate"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _request(port, "GET", "/api/v1/sessions?limit=1", key)
                break
            except (OSError, RuntimeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        # The cold path: the first MCP request of a process starts the SDK's event loop and
        # its session manager; timed apart, beside a first API search.
        first = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "deploy", "limit": 10}},
            }
        ).encode()
        t0 = time.perf_counter()
        _request(port, "GET", "/api/v1/search?q=deploy&limit=10", key)
        t1 = time.perf_counter()
        _request(port, "POST", "/mcp", key, first)
        t2 = time.perf_counter()
        cold = ((t1 - t0) * 1000, (t2 - t1) * 1000)
        rng = random.Random(7)
        api_ms: list[float] = []
        mcp_ms: list[float] = []
        hits = {"api": 0, "mcp": 0}
        for n, q in enumerate(_queries(rng, args.warmup + args.rounds)):
            path = "/api/v1/search?" + urllib.parse.urlencode({"q": q, "limit": 10, "window": 2})
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "search", "arguments": {"query": q, "limit": 10}},
                }
            ).encode()
            t0 = time.perf_counter()
            answer = json.loads(_request(port, "GET", path, key))
            t1 = time.perf_counter()
            called = json.loads(_request(port, "POST", "/mcp", key, body))
            t2 = time.perf_counter()
            if "error" in called or called["result"].get("isError"):
                raise RuntimeError(f"the MCP search of {q!r} failed: {called}")
            if n >= args.warmup:
                api_ms.append((t1 - t0) * 1000)
                mcp_ms.append((t2 - t1) * 1000)
                hits["api"] += len(answer["hits"])
                hits["mcp"] += len(called["result"]["structuredContent"]["hits"])
    finally:
        server.terminate()
        server.wait(timeout=30)

    load_avg = os.getloadavg()[0]
    print(f"\n{args.rounds} rounds, {args.messages:,} messages, load average {load_avg:.2f}")
    print(f"hits returned: API {hits['api']:,}, MCP {hits['mcp']:,}\n")
    print("| path | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|")
    for name, samples in (("GET /api/v1/search (baseline)", api_ms), ("MCP search tool", mcp_ms)):
        print(
            f"| {name} | {percentile(samples, 0.5):.1f} | {percentile(samples, 0.95):.1f} "
            f"| {percentile(samples, 0.99):.1f} |"
        )
    print(
        f"\nfirst request of the process (cold): API search {cold[0]:.1f} ms, "
        f"MCP search {cold[1]:.1f} ms (the SDK's loop and session manager start)"
    )
    ratio = percentile(mcp_ms, 0.95) / percentile(api_ms, 0.95)
    print(f"\nMCP p95 / API p95 = {ratio:.2f} (target: at most 1.5)")


if __name__ == "__main__":
    main()
