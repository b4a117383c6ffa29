"""A loopback stand-in for ``codex app-server``, speaking its protocol (JSON-RPC 2.0 without the
``"jsonrpc"`` field) over stdio (one JSON object per line) or WebSocket (one per text frame), for
tests and demos::

    python -m compression.testing.fake_codex                       # stdio
    python -m compression.testing.fake_codex --listen 127.0.0.1:8390  # ws://127.0.0.1:8390

Environment: ``FAKE_CODEX_LOG`` (a file each received message is appended to, as a JSON line),
``FAKE_CODEX_MODE``: ``ok`` (default: compaction completes with a ``contextCompaction`` item),
``legacy`` (the older ``thread/compacted`` notification instead), ``error`` (``thread not
found``), ``silent`` (answers ``{}`` but never reports the compaction).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

NOT_INITIALIZED = -32002


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"id": request_id, "error": {"code": code, "message": message}}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _initialized() -> dict[str, Any]:
    """``initialize``'s result, with the fields the real app server marks required."""
    home = os.path.abspath(os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex"))
    return {
        "userAgent": "fake-codex/0.1",
        "codexHome": home,
        "platformFamily": "windows" if os.name == "nt" else "unix",
        "platformOs": {"darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform),
    }


def _resumed(thread: str) -> dict[str, Any]:
    """``thread/resume``'s result for a thread loaded from storage (no turns: our client asks
    with ``excludeTurns``), shaped as the real app server answers."""
    now, cwd = int(time.time()), os.getcwd()
    return {
        "thread": {
            "id": thread,
            "sessionId": thread,
            "preview": "",
            "ephemeral": False,
            "projectId": None,
            "modelProvider": "openai",
            "createdAt": now,
            "updatedAt": now,
            "status": {"type": "idle"},
            "cwd": cwd,
            "cliVersion": "0.0.0-fake",
            "source": "appServer",
            "turns": [],
        },
        "model": "fake-model",
        "modelProvider": "openai",
        "cwd": cwd,
        "approvalPolicy": "on-request",
        "approvalsReviewer": "user",
        "sandbox": {"type": "readOnly", "networkAccess": False},
    }


def _turn(turn: str, status: str) -> dict[str, Any]:
    return {"id": turn, "items": [], "itemsView": "notLoaded", "status": status, "error": None}


class FakeCodex:
    """One connection's protocol state: what to answer to each message received."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode or os.environ.get("FAKE_CODEX_MODE", "ok")
        self.initialized = False

    def handle(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        path = os.environ.get("FAKE_CODEX_LOG")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:  # a notification ("initialized")
            return []
        if method == "initialize":
            self.initialized = True
            return [{"id": request_id, "result": _initialized()}]
        if not self.initialized:
            return [_error(request_id, NOT_INITIALIZED, "Not initialized")]
        thread = params.get("threadId", "")
        if method == "thread/resume":
            if thread.startswith("thr_"):
                return [{"id": request_id, "result": _resumed(thread)}]
            return [_error(request_id, -32600, f"thread not found: {thread}")]
        if method == "thread/compact/start":
            return self._compact(request_id, thread)
        return [_error(request_id, -32601, f"unknown method {method}")]

    def _compact(self, request_id: Any, thread: str) -> list[dict[str, Any]]:
        if self.mode == "error" or not thread.startswith("thr_"):
            return [_error(request_id, -32600, f"thread not found: {thread}")]
        out: list[dict[str, Any]] = [{"id": request_id, "result": {}}]
        if self.mode == "silent":
            return out
        turn = f"turn_{uuid.uuid4().hex[:8]}"
        item = {"type": "contextCompaction", "id": str(uuid.uuid4())}
        where = {"threadId": thread, "turnId": turn}
        out.append(
            {
                "method": "turn/started",
                "params": {"threadId": thread, "turn": _turn(turn, "inProgress")},
            }
        )
        began = _now_ms()
        out.append(
            {"method": "item/started", "params": {**where, "item": item, "startedAtMs": began}}
        )
        if self.mode == "legacy":
            out.append({"method": "thread/compacted", "params": where})
        else:
            done = {**where, "item": item, "completedAtMs": _now_ms()}
            out.append({"method": "item/completed", "params": done})
        finished = {"threadId": thread, "turn": _turn(turn, "completed")}
        out.append({"method": "turn/completed", "params": finished})
        return out


def serve_stdio() -> None:
    codex = FakeCodex()
    for line in sys.stdin:
        for message in codex.handle(json.loads(line)):
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()


@contextmanager
def websocket_server(host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve the protocol over WebSocket in a thread; yields its ``ws://`` URL."""
    from websockets.sync.server import serve

    def connection(websocket) -> None:
        codex = FakeCodex()
        for frame in websocket:
            for message in codex.handle(json.loads(frame)):
                websocket.send(json.dumps(message))

    with serve(connection, host, port) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        bound_host, bound_port = server.socket.getsockname()[:2]
        try:
            yield f"ws://{bound_host}:{bound_port}"
        finally:
            server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", help="HOST:PORT to serve WebSocket on (default: stdio)")
    args = parser.parse_args()
    if not args.listen:
        serve_stdio()
        return
    host, _, port = args.listen.rpartition(":")
    with websocket_server(host or "127.0.0.1", int(port)) as url:
        print(f"fake Codex app server on {url}", file=sys.stderr)
        threading.Event().wait()


if __name__ == "__main__":
    main()
