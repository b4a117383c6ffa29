"""A loopback stand-in for ``codex app-server``, speaking its stdio protocol (JSON-RPC 2.0 without
the ``"jsonrpc"`` field, one JSON object per line), for tests and demos::

    python -m compression.fake_codex

Environment: ``FAKE_CODEX_LOG`` (a file each received message is appended to, as a JSON line),
``FAKE_CODEX_MODE``: ``ok`` (default: compaction completes with a ``contextCompaction`` item),
``legacy`` (the older ``thread/compacted`` notification instead), ``error`` (``thread not
found``), ``silent`` (answers ``{}`` but never reports the compaction).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

NOT_INITIALIZED = -32002


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _log(message: dict[str, Any]) -> None:
    path = os.environ.get("FAKE_CODEX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(message) + "\n")


def _compact(request_id: Any, thread: str, mode: str) -> None:
    if mode == "error" or not thread.startswith("thr_"):
        _send(
            {"id": request_id, "error": {"code": -32600, "message": f"thread not found: {thread}"}}
        )
        return
    _send({"id": request_id, "result": {}})
    if mode == "silent":
        return
    turn = f"turn_{uuid.uuid4().hex[:8]}"
    item = {"type": "contextCompaction", "id": str(uuid.uuid4())}
    _send(
        {
            "method": "turn/started",
            "params": {
                "threadId": thread,
                "turn": {"id": turn, "status": "inProgress", "items": []},
            },
        }
    )
    _send({"method": "item/started", "params": {"threadId": thread, "turnId": turn, "item": item}})
    if mode == "legacy":
        _send({"method": "thread/compacted", "params": {"threadId": thread, "turnId": turn}})
    else:
        _send(
            {
                "method": "item/completed",
                "params": {"threadId": thread, "turnId": turn, "item": item},
            }
        )
    _send(
        {
            "method": "turn/completed",
            "params": {
                "threadId": thread,
                "turn": {"id": turn, "status": "completed", "items": []},
            },
        }
    )


def main() -> None:
    mode = os.environ.get("FAKE_CODEX_MODE", "ok")
    initialized = False
    for line in sys.stdin:
        message = json.loads(line)
        _log(message)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:  # a notification ("initialized")
            continue
        if method == "initialize":
            initialized = True
            _send(
                {"id": request_id, "result": {"userAgent": "fake-codex/0.1", "platformOs": "linux"}}
            )
        elif not initialized:
            _send(
                {"id": request_id, "error": {"code": NOT_INITIALIZED, "message": "Not initialized"}}
            )
        elif method == "thread/resume":
            thread = params.get("threadId", "")
            if thread.startswith("thr_"):
                _send({"id": request_id, "result": {"thread": {"id": thread, "preview": ""}}})
            else:
                _send(
                    {
                        "id": request_id,
                        "error": {"code": -32600, "message": f"thread not found: {thread}"},
                    }
                )
        elif method == "thread/compact/start":
            _compact(request_id, params.get("threadId", ""), mode)
        else:
            _send(
                {"id": request_id, "error": {"code": -32601, "message": f"unknown method {method}"}}
            )


if __name__ == "__main__":
    main()
