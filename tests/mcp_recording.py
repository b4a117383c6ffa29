"""A recording proxy between an MCP client and the service: what the real client sent, kept as
a fixture (tests/data/hermes_mcp/) so the service is checked against it where the client
cannot be installed. The key is never kept: ``Authorization`` is recorded as ``Bearer <key>``."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

KEPT_HEADERS = ("content-type", "accept", "mcp-protocol-version", "mcp-session-id")


class RecordingProxy:
    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.exchanges: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                request = urllib.request.Request(  # noqa: S310 - loopback
                    proxy.target + self.path, data=body, method=self.command
                )
                for name, value in self.headers.items():
                    if name.lower() not in ("host", "content-length", "connection"):
                        request.add_header(name, value)
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                        status, headers, answer = response.status, response.headers, response.read()
                except urllib.error.HTTPError as error:
                    status, headers, answer = error.code, error.headers, error.read()
                proxy.exchanges.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {
                            k.lower(): v
                            for k, v in self.headers.items()
                            if k.lower() in KEPT_HEADERS
                        }
                        | (
                            {"authorization": "Bearer <key>"}
                            if "Authorization" in self.headers
                            else {}
                        ),
                        "body": json.loads(body) if body else None,
                        "status": status,
                    }
                )
                self.send_response(status)
                for name, value in headers.items():
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def save(self, path: Path) -> None:
        path.write_text(
            "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.exchanges),
            encoding="utf-8",
        )
