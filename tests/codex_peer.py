"""The real Codex app server (``@openai/codex``, pinned in tests/peers and installed there by
bin/peers) for the tests: where it is, how to start it talking to the loopback test model, and a
small JSON-RPC client that plays the gateway's part (start a thread, run turns, collect what the
app server notifies). Written apart from compression/paths/codex.py on purpose: the gateway side
must not share the code under test."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PEERS = Path(__file__).resolve().parent / "peers"
CODEX = PEERS / "node_modules" / ".bin" / "codex"
PINNED = json.loads((PEERS / "package.json").read_text())["dependencies"]["@openai/codex"]
KEY_ENV = "HERMES_LOOPBACK_KEY"  # the custom provider's env_key: a dummy key, so no login
NEVER = 10**12  # an auto-compact limit Codex never reaches: only we ask it to compact


def missing() -> str | None:
    """Why the real app server cannot run here, or None."""
    if shutil.which("node") is None:
        return "Node.js is not installed (the codex launcher is a Node script); run bin/peers"
    if not CODEX.exists():
        return "the real Codex app server is not installed: run bin/peers (needs Node.js and npm)"
    return None


def require_codex() -> str:
    reason = missing()
    if reason:
        pytest.skip(reason)
    return str(CODEX)


def arguments(base_url: str, auto_compact: int = NEVER) -> list[str]:
    """``-c`` overrides: a custom model provider at the loopback model, speaking the Responses
    API, no retries (a failure shows at once), and nothing that reaches the network."""
    settings = {
        "model_provider": '"loopback"',
        "model": '"loopback-model"',
        "model_providers.loopback.name": '"loopback test model"',
        "model_providers.loopback.base_url": json.dumps(base_url),
        "model_providers.loopback.wire_api": '"responses"',
        "model_providers.loopback.env_key": json.dumps(KEY_ENV),
        "model_providers.loopback.request_max_retries": "0",
        "model_providers.loopback.stream_max_retries": "0",
        "model_context_window": "100000",
        "model_auto_compact_token_limit": str(auto_compact),
        "analytics.enabled": "false",
    }
    args = [part for key, value in settings.items() for part in ("-c", f"{key}={value}")]
    for feature in ("plugins", "apps", "remote_plugin", "in_app_updates"):
        args += ["--disable", feature]  # each would fetch from GitHub or chatgpt.com at startup
    return args


def environment(home: Path) -> dict[str, str]:
    """Nothing of the machine's Codex setup is read: CODEX_HOME and HOME are the test's."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(home), KEY_ENV: "x"}


def command(home: Path, base_url: str, auto_compact: int = NEVER) -> list[str]:
    """``codex app-server`` over stdio as the service starts it (``codex_app_server_command``):
    through ``env`` so the spawned server gets the test's CODEX_HOME and key."""
    env = [f"{key}={value}" for key, value in environment(home).items()]
    return ["env", "-i", *env, require_codex(), "app-server", *arguments(base_url, auto_compact)]


class Peer:
    """The gateway's JSON-RPC connection to an app server. ``seen`` holds every notification."""

    def __init__(self, send: Callable[[str], None], close: Callable[[], None]) -> None:
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._send, self._close, self._id = send, close, 0

    def receive(self, timeout: float = 30) -> dict[str, Any]:
        line = self.inbox.get(timeout=timeout)
        if line is None:
            raise EOFError("the Codex app server closed the connection")
        message = json.loads(line)
        if "method" in message and "id" not in message:
            self.seen.append(message)
        return message

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = self.receive()
            if message.get("id") == self._id and "method" not in message:
                assert "error" not in message, (method, message["error"])
                return message["result"]

    def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Notifications up to and including the first ``done`` accepts."""
        start = len(self.seen)
        while True:
            message = self.receive()
            if "id" not in message and done(message):
                return self.seen[start:]

    def initialize(self) -> None:
        self.request("initialize", {"clientInfo": {"name": "hermes_test_gateway", "version": "1"}})
        self._send(json.dumps({"method": "initialized"}))

    def turn(self, thread: str, text: str) -> list[dict[str, Any]]:
        """One user turn, to its ``turn/completed``; the turn's notifications."""
        start = len(self.seen)
        self.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})
        self.until(lambda m: m.get("method") == "turn/completed")
        return self.seen[start:]

    def close(self) -> None:
        self._close()


def _pump(lines: Iterator[str], inbox: queue.Queue) -> None:
    with contextlib.suppress(Exception):
        for line in lines:
            inbox.put(line)
    inbox.put(None)


@contextlib.contextmanager
def stdio_peer(home: Path, base_url: str, auto_compact: int = NEVER) -> Iterator[Peer]:
    """A gateway's own ``codex app-server`` over stdio."""
    process = subprocess.Popen(
        [require_codex(), "app-server", *arguments(base_url, auto_compact)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment(home),
        cwd=home,
        text=True,
        encoding="utf-8",
    )

    def send(text: str) -> None:
        process.stdin.write(text + "\n")
        process.stdin.flush()

    def close() -> None:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    peer = Peer(send, close)
    threading.Thread(target=_pump, args=(process.stdout, peer.inbox), daemon=True).start()
    try:
        peer.initialize()
        yield peer
    finally:
        peer.close()


@contextlib.contextmanager
def websocket_app_server(home: Path, base_url: str, auto_compact: int = NEVER) -> Iterator[str]:
    """``codex app-server --listen ws://127.0.0.1:PORT``, as a gateway runs it; yields the URL
    once it accepts connections."""
    with socket.socket() as probe:  # a free port (the app server has no "any port" answer)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"ws://127.0.0.1:{port}"
    process = subprocess.Popen(
        [require_codex(), "app-server", "--listen", url, *arguments(base_url, auto_compact)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=environment(home),
        cwd=home,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, f"codex app-server exited ({process.returncode})"
            assert time.monotonic() < deadline, "codex app-server --listen did not start in 30 s"
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def websocket_peer(url: str) -> Iterator[Peer]:
    from websockets.sync.client import connect

    with connect(url, max_size=64 * 2**20) as socket_:
        peer = Peer(socket_.send, socket_.close)
        threading.Thread(target=_pump, args=(iter(socket_), peer.inbox), daemon=True).start()
        peer.initialize()
        yield peer
