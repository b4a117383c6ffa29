"""Sessions whose model runs through a Codex app server (SPEC T7a).

Such a session is opened with ``codex_thread_id``: the conversation the model sees is Codex's
thread, so compacting means compacting that thread. ``compression.codex_app_server_auto``:

* ``native`` (default): Codex compacts its own threads (``model_auto_compact_token_limit``); our
  automatic triggers stand aside and we only record what Codex reports (the gateway forwards the
  app server's ``contextCompaction`` item notifications, see :func:`record_notifications`);
* ``managed``: our triggers decide, and compaction is asked of the app server with its JSON-RPC
  ``thread/compact/start`` request (:func:`compact_thread`);
* ``off``: no automatic compaction of these sessions.

A manual compression (API, CLI, console, ``/compress``) always asks the app server. Our rows are
not changed by a Codex compaction -- they remain the searchable transcript.

The app server speaks JSON-RPC 2.0 without the ``"jsonrpc"`` field, one JSON object per line on
stdio (``codex_app_server_command`` is started for each compaction) or one per WebSocket text frame
(``codex_app_server_url``: the app server a gateway already runs with ``--listen ws://…``, so the
compaction happens in the very process that has the thread loaded): ``initialize`` then the
``initialized`` notification, ``thread/resume {threadId, excludeTurns}`` (the thread is loaded
from Codex's own storage; its history is not sent back), ``thread/compact/start {threadId}``
which answers ``{}`` at once, then ``item/started`` / ``item/completed`` notifications carrying a
``{"type": "contextCompaction"}`` item (older servers also send ``thread/compacted``). The
messages are checked against the pinned real app server's JSON Schema
(tests/test_codex_protocol.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import threading
import time
from typing import IO, Any, cast

from django.db import transaction

from compression.events import record_event
from compression.models import CompressionEvent
from core.config import get_config
from sessions_app.models import Session
from sessions_app.selectors.sessions import lock_session
from sessions_app.services.provider import save_compactions_elsewhere

logger = logging.getLogger(__name__)
Outcome = CompressionEvent.Outcome
Path = CompressionEvent.Path
CLIENT_INFO = {"name": "hermes_memory", "title": "Hermes Memory", "version": "0.1"}
SEEN_LIMIT = 200  # notification ids remembered per session, to record each compaction once


class CodexError(Exception):
    """The app server could not be reached or refused; the message says which."""


def thread_id(session: Session) -> str | None:
    return ((session.provider_state or {}).get("codex") or {}).get("thread_id")


class _Stdio:
    """Starts ``codex app-server`` and speaks to it over its stdin and stdout."""

    def __init__(self, command: tuple[str, ...], lines: queue.Queue) -> None:
        try:
            self.process = subprocess.Popen(  # noqa: S603 - the operator's configured command
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
        except OSError as exc:
            raise CodexError(
                f"cannot start the Codex app server ({' '.join(command)}): {exc.strerror or exc}"
            ) from None
        # The pipes asked for above (Popen's types allow None, for the streams not piped).
        self.stdin = cast(IO[str], self.process.stdin)
        self.stdout = cast(IO[str], self.process.stdout)
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, lines: queue.Queue) -> None:
        for line in self.stdout:
            lines.put(line)
        lines.put(None)

    def send(self, text: str) -> None:
        try:
            self.stdin.write(text + "\n")
            self.stdin.flush()
        except (BrokenPipeError, OSError):
            raise CodexError("the Codex app server closed its input") from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


class _WebSocket:
    """Connects to an app server started with ``--listen ws://…`` -- the same process a gateway
    drives, so a compaction is seen by the thread it has loaded."""

    def __init__(self, url: str, timeout: float, lines: queue.Queue) -> None:
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        self._errors = (OSError, WebSocketException)
        self._stack = contextlib.ExitStack()
        try:
            self.socket = self._stack.enter_context(
                connect(url, open_timeout=min(timeout, 30), max_size=64 * 2**20)
            )
        except (*self._errors, TimeoutError) as exc:
            raise CodexError(f"cannot connect to the Codex app server at {url}: {exc}") from None
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, lines: queue.Queue) -> None:
        try:
            for frame in self.socket:
                lines.put(frame if isinstance(frame, str) else frame.decode("utf-8", "replace"))
        except self._errors:
            pass
        lines.put(None)

    def send(self, text: str) -> None:
        try:
            self.socket.send(text)
        except self._errors:
            raise CodexError("the connection to the Codex app server closed") from None

    def close(self) -> None:
        with contextlib.suppress(*self._errors):
            self._stack.close()


class AppServer:
    """A JSON-RPC client of the Codex app server: over WebSocket when
    ``codex_app_server_url`` is set, else over the stdio of ``codex_app_server_command``."""

    def __init__(self, config) -> None:
        self.deadline = time.monotonic() + config.codex_app_server_timeout_seconds
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self._next_id = 0
        self.transport: _WebSocket | _Stdio
        if config.codex_app_server_url:
            self.transport = _WebSocket(
                config.codex_app_server_url, config.codex_app_server_timeout_seconds, self.lines
            )
        else:
            self.transport = _Stdio(config.codex_app_server_command, self.lines)

    def _send(self, message: dict[str, Any]) -> None:
        self.transport.send(json.dumps(message))

    def _next(self) -> dict[str, Any]:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise CodexError("the Codex app server did not answer in time")
        try:
            line = self.lines.get(timeout=remaining)
        except queue.Empty:
            raise CodexError("the Codex app server did not answer in time") from None
        if line is None:
            raise CodexError("the Codex app server exited")
        try:
            message = json.loads(line)
        except ValueError:
            logger.warning("Codex app server wrote a line that is not JSON: %r", line[:200])
            return {}
        return message if isinstance(message, dict) else {}

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        self._send({"id": request_id, "method": method, "params": params})
        while True:
            message = self._next()
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    error = message["error"] or {}
                    raise CodexError(
                        f"{method} failed: {error.get('message', 'error')} "
                        f"(code {error.get('code')})"
                    )
                return message.get("result") or {}
            if "method" in message and "id" not in message:
                self._heard(message)

    def _heard(self, message: dict[str, Any]) -> None:
        """Keep a notification; say so in the log when the app server calls what we asked for
        deprecated, so a protocol change shows before it breaks."""
        self.notifications.append(message)
        if message.get("method") == "deprecationNotice":
            summary = str(_params(message).get("summary", ""))[:300]
            logger.warning("Codex app server deprecation notice: %s", summary)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send({"method": method, **({"params": params} if params is not None else {})})

    def wait_for_compaction(self, thread: str | None) -> dict[str, Any]:
        """The notification that says the thread's compaction finished."""
        seen = iter(self.notifications)
        while True:
            message = next(seen, None)
            if message is None:
                message = self._next()
                if "id" in message:
                    continue
                self._heard(message)
            if is_compaction(message) and _params(message).get("threadId") == thread:
                return message

    def close(self) -> None:
        self.transport.close()


def _params(message: Any) -> dict[str, Any]:
    """A notification's params, whatever the sender put there."""
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def is_compaction(message: dict[str, Any]) -> bool:
    method = message.get("method")
    params = _params(message)
    if method == "item/completed":
        item = params.get("item")
        item = item if isinstance(item, dict) else {}
        return item.get("type") == "contextCompaction"
    return method == "thread/compacted"  # the older protocol's notification


def _notification_key(message: dict[str, Any]) -> str:
    params = _params(message)
    item = params.get("item")
    item = item if isinstance(item, dict) else {}
    key = str(item.get("id") or f"{params.get('threadId')}/{params.get('turnId')}")
    return key[:200]  # ids are short; a longer one is not worth storing whole


def compact_thread(session: Session, trigger: str) -> CompressionEvent:
    """Ask the app server to compact this session's thread and wait until it has ("managed",
    and every manual compression of a Codex session). Records the event; never raises."""
    config = get_config().compression
    thread = thread_id(session)
    started = time.monotonic()
    server = None
    try:
        server = AppServer(config)
        server.request("initialize", {"clientInfo": CLIENT_INFO})
        server.notify("initialized")
        # Only the thread's loading matters, not its history (which can be long): excludeTurns.
        server.request("thread/resume", {"threadId": thread, "excludeTurns": True})
        server.request("thread/compact/start", {"threadId": thread})
        done = server.wait_for_compaction(thread)
    except CodexError as exc:
        from compression.engine.compress import _note_failure

        logger.warning("Codex compaction of session %s failed: %s", session.pk, exc)
        _note_failure(session, config)  # F1: cooldown, failure streak
        session.refresh_from_db()
        return _event(
            session,
            trigger,
            Outcome.FAILED,
            f"asking the Codex app server to compact thread {thread} failed",
            started,
            error=str(exc),
        )
    finally:
        if server is not None:
            server.close()
    with transaction.atomic():
        locked = lock_session(session)
        state = locked.provider_state or {}
        codex = state.setdefault("codex", {})
        codex["seen"] = [*codex.get("seen", []), _notification_key(done)][-SEEN_LIMIT:]
        save_compactions_elsewhere(locked, state, 1, ended_failures=True)
        reason = f"the Codex app server compacted thread {thread}"
        return _event(locked, trigger, Outcome.COMPRESSED, reason, started)


def _event(
    session: Session, trigger: str, outcome: str, reason: str, started: float, error: str = ""
) -> CompressionEvent:
    return record_event(
        session,
        trigger,
        outcome,
        reason,
        path=Path.CODEX_MANAGED,
        started=started,
        error=error,
        summary_model="codex app server",
    )


def record_notifications(session: Session, messages: list[dict[str, Any]]) -> int:
    """Record the compactions among app-server notifications a gateway forwarded ("native":
    Codex compacted its own thread). Each is recorded once, whatever is sent again."""
    thread = thread_id(session)
    recorded = 0
    with transaction.atomic():
        locked = lock_session(session)
        state = locked.provider_state or {}
        codex = state.setdefault("codex", {})
        seen = list(codex.get("seen", []))
        for message in messages:
            params = _params(message)
            if not is_compaction(message) or params.get("threadId") not in (None, thread):
                continue
            key = _notification_key(message)
            if key in seen:
                continue
            seen.append(key)
            recorded += 1
            record_event(
                locked,
                CompressionEvent.Trigger.CODEX,
                Outcome.COMPRESSED,
                f"Codex compacted thread {thread} itself (turn {params.get('turnId')})",
                path=Path.CODEX_NATIVE,
                summary_model="codex app server",
            )
        if recorded:
            codex["seen"] = seen[-SEEN_LIMIT:]
            save_compactions_elsewhere(locked, state, recorded)
    return recorded
