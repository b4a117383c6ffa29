"""The real Hermes Agent (``hermes-agent`` 0.19.0 with its ``[acp]`` extra, installed by
``bin/peers`` into ``tests/peers/hermes/.venv``) driven as its users drive it, in a temporary
``HERMES_HOME``, against the loopback OpenAI-compatible server.

Hermes always streams, tool calls included, and decides its own compaction from the
``usage.prompt_tokens`` the server reports; :class:`ScriptedAgent` plays the model: it answers
Hermes's summary requests with a summary, runs a shell command through Hermes's ``terminal`` tool
when the user's message asks for one (``run `echo hi```), and reports whatever prompt size the
test wants. Where the peer is not installed every test that needs it skips, saying why.

The ways to drive it (each warm turn measured here against the loopback model, 40 turns):

* :meth:`HermesHome.chat` -- ``hermes chat -q MSG -Q --resume SID``, a new Hermes process per
  turn: about 4-6 s a turn;
* :class:`HermesGateway` -- one long-lived ``hermes gateway run`` with its API-server platform,
  ``POST /v1/chat/completions`` with ``X-Hermes-Session-Id``: 0.3 s a turn (a fresh agent, and
  the history from state.db, per request);
* :class:`HermesACP` -- ``hermes acp`` over stdio with the ACP SDK: 0.15 s a turn;
* :class:`HermesTUI` -- the TUI gateway's JSON-RPC over stdio: 0.1 s a turn.

:meth:`HermesHome.record_engine_calls` installs a plugin context engine that writes down what
Hermes calls on it (``tests/peers/hermes/engine_recorder``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from compression.testing.fake_model import Reply, Respond

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "tests" / "peers" / "hermes"
HERMES = PEER / ".venv" / "bin" / "hermes"
HERMES_PYTHON = PEER / ".venv" / "bin" / "python"
VERSION = "0.19.0"
MODEL = "loopback-agent"
RECORDER = "engine-recorder"
# What Hermes's summariser prompt always holds (agent/context_compressor.py, _generate_summary).
SUMMARY_ASKS = ("TURNS TO SUMMARIZE:", "NEW TURNS TO INCORPORATE:")
STATUS = ("⚠", "⟳")
RUN = re.compile(r"run `([^`]+)`")


def missing() -> str | None:
    """Why the real Hermes cannot run here, or None."""
    if not HERMES.exists():
        return (
            f"Hermes Agent {VERSION} is not installed in {PEER / '.venv'} (bin/peers installs it "
            "from PyPI; see tests/peers/hermes/install.log)"
        )
    stamp = PEER / ".venv" / ".hermes-installed"
    if not stamp.exists():
        return "the Hermes Agent install in tests/peers/hermes/.venv is incomplete (run bin/peers)"
    # bin/peers stamps the install with the hash of the pins it installed.
    pins = hashlib.sha256((PEER / "requirements.txt").read_bytes()).hexdigest()
    if stamp.read_text().strip() != pins:
        return (
            "the Hermes Agent install in tests/peers/hermes/.venv predates "
            "tests/peers/hermes/requirements.txt (run bin/peers)"
        )
    return None


needs_hermes = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def is_summary_request(body: dict[str, Any] | None) -> bool:
    messages = (body or {}).get("messages") or []
    return bool(messages) and any(ask in text_of(messages[-1]) for ask in SUMMARY_ASKS)


def rough_tokens(body: dict[str, Any] | None) -> int:
    """About what a tokenizer would say of the request (4 characters a token)."""
    return len(json.dumps((body or {}).get("messages") or [], ensure_ascii=False)) // 4


@dataclass
class ScriptedAgent:
    """The model behind a Hermes under test. ``prompt_tokens(body)`` is the prompt size each
    chat reply reports (default: the rough size of what was sent); ``summary(body)`` the text of
    each summary Hermes asks for. Every request is kept, in order: ``requests`` (the agent's
    turns, which offer tools), ``summary_requests``, and ``aux_requests`` (Hermes's other side
    calls, such as the session's title, answered with a short text)."""

    prompt_tokens: Callable[[dict[str, Any] | None], int] = rough_tokens
    summary: Callable[[dict[str, Any] | None], str] = field(
        default=lambda body: "## Active Task\nNone.\n## Completed Actions\n1. Talked (loopback)."
    )
    requests: list[dict[str, Any]] = field(default_factory=list)
    summary_requests: list[dict[str, Any]] = field(default_factory=list)
    aux_requests: list[dict[str, Any]] = field(default_factory=list)
    _calls: int = 0

    def behaviour(self) -> Respond:
        return Respond(self.answer)

    def answer(self, body: dict[str, Any] | None) -> Reply:
        if is_summary_request(body):
            self.summary_requests.append(body or {})
            return Reply(self.summary(body), usage={"prompt_tokens": 500, "completion_tokens": 80})
        if "tools" not in (body or {}):
            self.aux_requests.append(body or {})
            return Reply("Loopback session", usage={"prompt_tokens": 50, "completion_tokens": 5})
        self.requests.append(body or {})
        messages = (body or {}).get("messages") or []
        last = messages[-1] if messages else {}
        usage = {"prompt_tokens": self.prompt_tokens(body), "completion_tokens": 20}
        if last.get("role") == "user":
            asked = RUN.search(text_of(last))
            if asked and (body or {}).get("tools"):
                self._calls += 1
                call = {
                    "id": f"call_{self._calls:04d}",
                    "type": "function",
                    "function": {
                        "name": "terminal",
                        "arguments": json.dumps({"command": asked.group(1)}),
                    },
                }
                return Reply(None, tool_calls=[call], usage=usage)
            return Reply(f"Noted: {text_of(last).strip()[:80]}", usage=usage)
        if last.get("role") == "tool":
            first = text_of(last).strip().splitlines()[:1]
            return Reply(f"Done: {first[0][:120] if first else 'no output'}", usage=usage)
        return Reply("Go on.", usage=usage)


@dataclass
class ChatResult:
    reply: str
    session_id: str
    stdout: str
    stderr: str


class HermesHome:
    """A ``HERMES_HOME`` of its own: ``config.yaml`` points Hermes at ``base_url`` with the
    model's context length, and ``config`` (merged over the defaults here) adds anything else,
    e.g. ``{"compression": {"in_place": False}}``. ``python_path``: folders every Hermes process
    of this home imports from first (``PYTHONPATH``), e.g. where a plugin was installed."""

    def __init__(
        self,
        path: Path,
        base_url: str,
        *,
        context_length: int = 200_000,
        config: dict[str, Any] | None = None,
        python_path: list[Path] | None = None,
    ) -> None:
        self.python_path = [str(p) for p in python_path or ()]
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        settings: dict[str, Any] = {
            "model": {
                "provider": "custom",
                "base_url": base_url,
                "default": MODEL,
                "api_key": "sk-loopback",
                "context_length": context_length,
            },
            # Commands run here, in the test's directory, without asking.
            "terminal": {"backend": "local", "cwd": str(self.path)},
            "approvals": {"mode": "off"},
        }
        self.config = settings
        self.configure(config or {})

    def configure(self, config: dict[str, Any]) -> None:
        """Merges ``config`` (one level deep) into ``config.yaml``; Hermes reads it afresh in
        each process it starts."""
        for key, value in config.items():
            if isinstance(value, dict) and isinstance(self.config.get(key), dict):
                self.config[key] = {**self.config[key], **value}
            else:
                self.config[key] = value
        (self.path / "config.yaml").write_text(yaml.safe_dump(self.config), encoding="utf-8")

    @property
    def state_db(self) -> Path:
        return self.path / "state.db"

    def record_engine_calls(self) -> None:
        """Installs the test peer's ``engine-recorder`` plugin (``tests/peers/hermes/
        engine_recorder``: Hermes's built-in compressor as a plugin context engine that writes
        down every call Hermes makes on it) as a user plugin of this home, and selects it, as a
        user would (``hermes plugins enable``, ``context.engine``). ``engine_calls()`` reads
        what it wrote."""
        target = self.path / "plugins" / RECORDER
        shutil.copytree(PEER / "engine_recorder", target, dirs_exist_ok=True)
        enabled = list((self.config.get("plugins") or {}).get("enabled") or [])
        self.configure(
            {
                "plugins": {"enabled": [*enabled, RECORDER]},
                "context": {"engine": RECORDER},
            }
        )

    def engine_calls(self) -> list[dict[str, Any]]:
        """The ``engine-recorder``'s calls so far, in order (one dict a call)."""
        log = self.path / "engine-calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("HERMES_", "OPENAI_", "DJANGO_")) and key != "VIRTUAL_ENV"
        }
        env.update(
            {
                "HERMES_HOME": str(self.path),
                "HOME": str(self.path),
                "NO_COLOR": "1",
                "TERM": "dumb",
                "HERMES_ACCEPT_HOOKS": "1",
                "PATH": f"{HERMES.parent}:{os.environ.get('PATH', '')}",
            }
        )
        if self.python_path:
            env["PYTHONPATH"] = os.pathsep.join(self.python_path)
        env.update(extra or {})
        return env

    def chat(
        self,
        message: str,
        *,
        resume: str | None = None,
        timeout: float = 180,
        extra_env: dict[str, str] | None = None,
    ) -> ChatResult:
        """One turn as ``hermes chat -q MSG -Q [--resume SID]`` takes it; fails the test with
        Hermes's output if it exits non-zero or prints no session id."""
        command = [str(HERMES), "chat", "-q", message, "-Q", "--yolo"]
        if resume:
            command += ["--resume", resume]
        done = subprocess.run(
            command,
            cwd=self.path,
            env=self.env(extra_env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        found = re.findall(r"session_id:\s*(\S+)", done.stdout + done.stderr)
        assert done.returncode == 0 and found, (
            f"hermes chat exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}"
            f"\n--- stderr\n{done.stderr[-4000:]}"
        )
        # Hermes's status lines (a warning, "compacting context…") come before the reply.
        lines = done.stdout.split("session_id:")[0].strip().splitlines()
        reply = "\n".join(x for x in lines if not x.lstrip().startswith(STATUS)).strip()
        return ChatResult(reply, found[-1], done.stdout, done.stderr)


def free_port() -> int:
    """A loopback port nobody listens on now (the OS picks it; it is free again at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def processes_under(home: Path) -> list[int]:
    """The live processes (zombies aside) whose ``HERMES_HOME`` is ``home``: everything a
    driver started there, including the commands Hermes's terminal tool runs (each in a session
    of its own, out of reach of a process-group signal; Hermes passes ``HERMES_HOME`` on)."""
    marker = f"HERMES_HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
            environ = (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        if state != "Z" and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def end_processes_under(home: Path, grace: float = 5) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds, by pid, to whatever still runs under
    ``home`` (see :func:`processes_under`)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes_under(home):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while processes_under(home) and time.monotonic() < deadline:
            time.sleep(0.1)


class _Child:
    """A long-lived Hermes process started in ``home``; ``stop`` ends it and then anything
    else still running under that home, so nothing outlives the test, even a failing one."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.process: subprocess.Popen[Any] | None = None

    def start(self, command: list[str], **popen: Any) -> subprocess.Popen[Any]:
        self.process = subprocess.Popen(command, start_new_session=True, **popen)
        return self.process

    def stop(self, timeout: float = 20) -> int | None:
        """SIGTERM (Hermes shuts down its tools and sessions on it) and ``timeout`` seconds to
        exit, then SIGKILL, and the same to whatever is left under the home; the exit code of the
        process (Hermes's gateway exits 1 on a signal, asking systemd to restart it)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
        if process.poll() is None:
            process.kill()
        end_processes_under(self.home)
        return process.wait(timeout=timeout)


@dataclass
class GatewayTurn:
    reply: str
    session_id: str  # Hermes's session id after the turn (a new one once Hermes rotated)
    seconds: float
    body: dict[str, Any]


class HermesGateway:
    """One long-lived ``hermes gateway run`` serving its API-server platform on a free loopback
    port, in ``home``: the fast way to drive many turns (a warm turn takes a fraction of a
    second; ``hermes chat -q --resume`` starts Hermes afresh each turn, about 4 s here).

    The platform is enabled by its environment (``gateway/config.py``): ``API_SERVER_ENABLED``,
    ``API_SERVER_KEY`` (required, 16 characters at least, even on loopback), ``API_SERVER_HOST``,
    ``API_SERVER_PORT``. Each ``POST /v1/chat/completions`` builds a fresh agent; a conversation
    continues by sending ``X-Hermes-Session-Id`` (Hermes then loads the history from its
    ``state.db`` and ignores earlier messages in the body), and the reply's header names the
    session the turn ended in: a new id once Hermes's compaction rotated the session. So each
    ``conversation`` here is a name for the latest Hermes id of one conversation.

    Use it as a context manager; it stops the gateway and everything it started on exit."""

    def __init__(
        self,
        home: HermesHome,
        *,
        extra_env: dict[str, str] | None = None,
        startup_timeout: float = 90,
        stop_timeout: float = 20,
    ) -> None:
        self.home = home
        self.stop_timeout = stop_timeout
        self.key = secrets.token_hex(24)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.extra_env = extra_env or {}
        self.startup_timeout = startup_timeout
        self.log_path = home.path / "gateway.log"
        self.sessions: dict[str, str] = {}
        self.session_keys: dict[str, str] = {}
        self.turns: list[GatewayTurn] = []
        self._child = _Child(home.path)
        self._log: Any = None

    def __enter__(self) -> HermesGateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        env = self.home.env(
            {
                "API_SERVER_ENABLED": "true",
                "API_SERVER_KEY": self.key,
                "API_SERVER_HOST": "127.0.0.1",
                "API_SERVER_PORT": str(self.port),
                **self.extra_env,
            }
        )
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (closed in stop)
        process = self._child.start(
            [str(HERMES), "gateway", "run", "-v", "--accept-hooks"],
            cwd=self.home.path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + self.startup_timeout
        try:
            while True:
                if process.poll() is not None:
                    raise AssertionError(
                        f"hermes gateway exited {process.returncode} before answering\n"
                        f"{self.log_tail()}"
                    )
                try:
                    health = f"{self.base_url}/health"
                    with urllib.request.urlopen(health, timeout=2) as answer:  # noqa: S310 - loopback
                        if answer.status == 200:
                            return
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"hermes gateway did not answer on {self.base_url} within "
                        f"{self.startup_timeout:.0f} s\n{self.log_tail()}"
                    )
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> int | None:
        code = self._child.stop(self.stop_timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no gateway log)"
        return "--- gateway log\n" + "\n".join(text.splitlines()[-lines:])

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float = 180,
    ) -> tuple[int, dict[str, str], Any]:
        """Any call on the API server, authenticated: (status, headers, JSON body)."""
        data = None if body is None else json.dumps(body).encode()
        ask = urllib.request.Request(  # noqa: S310 - loopback
            f"{self.base_url}{path}",
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.key}",
                "Content-Type": "application/json",
                **(headers or {}),
            },
        )
        try:
            with urllib.request.urlopen(ask, timeout=timeout) as answer:  # noqa: S310 - loopback
                status, raw, got = answer.status, answer.read(), dict(answer.headers)
        except urllib.error.HTTPError as error:
            status, raw, got = error.code, error.read(), dict(error.headers)
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        return status, got, payload

    def turn(
        self,
        message: str,
        conversation: str = "default",
        *,
        session_key: str | None = None,
        timeout: float = 180,
    ) -> GatewayTurn:
        """One user turn of ``conversation``; fails the test with the gateway's log if Hermes
        does not answer 200 with a reply. ``session_key`` (kept for the conversation's later
        turns) is sent as ``X-Hermes-Session-Key``: the stable per-channel key Hermes hands its
        context engine as ``on_session_start(conversation_id=…)``, across rotations."""
        # A new conversation gets an id of its own: without one Hermes derives it from the
        # first user message, so two conversations that open alike would share a session.
        session = self.sessions.setdefault(conversation, f"gw_{secrets.token_hex(8)}")
        headers = {"X-Hermes-Session-Id": session}
        if session_key:
            self.session_keys[conversation] = session_key
        if conversation in self.session_keys:
            headers["X-Hermes-Session-Key"] = self.session_keys[conversation]
        started = time.monotonic()
        status, got, body = self.request(
            "POST",
            "/v1/chat/completions",
            {"model": "hermes-agent", "messages": [{"role": "user", "content": message}]},
            headers,
            timeout,
        )
        seconds = time.monotonic() - started
        session_id = {k.lower(): v for k, v in got.items()}.get("x-hermes-session-id", "")
        assert status == 200 and isinstance(body, dict) and session_id, (
            f"gateway answered {status}: {body}\n{self.log_tail()}"
        )
        self.sessions[conversation] = session_id
        reply = body["choices"][0]["message"]["content"] or ""
        done = GatewayTurn(reply, session_id, seconds, body)
        self.turns.append(done)
        return done


@dataclass
class ACPReply:
    text: str  # the agent_message_chunk texts of this prompt, joined
    stop_reason: str
    updates: list[Any]  # every session/update Hermes sent while the prompt ran
    seconds: float


class _Editor:
    """The ACP client side, as an editor plays it: it keeps every session/update and allows
    whatever Hermes asks permission for, once (a test's commands are its own)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.permissions.append(tool_call)
        allow = next((o for o in options if o.kind == "allow_once"), None)
        if allow is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
        )


class HermesACP:
    """``hermes acp`` (Hermes's ACP adapter, the ``[acp]`` extra) over stdio, driven by the
    protocol's Python SDK as an editor drives it: ``initialize``, ``session/new`` (or
    ``session/load`` of a session in ``state.db``, which replays its history first), then
    ``prompt(text)``. Slash commands are prompts too; Hermes answers its own (``/compact``,
    ``/context``, ``/help``, …) without the model and passes any other ``/word`` to it.

    The connection lives on an event loop of its own thread (the suite may run one in the main
    thread already); each call here blocks until Hermes answers. Use it as a context manager:
    on exit stdin is closed (Hermes exits on EOF), and whatever is left under the home ends."""

    def __init__(
        self,
        home: HermesHome,
        *,
        extra_env: dict[str, str] | None = None,
        timeout: float = 180,
    ) -> None:
        self.home = home
        self.extra_env = extra_env or {}
        self.timeout = timeout
        self.log_path = home.path / "acp.log"
        self.editor = _Editor()
        self.session_id: str | None = None
        self.info: Any = None  # Hermes's initialize answer (its capabilities)
        self._loop: Any = None
        self._thread: threading.Thread | None = None
        self._stack: Any = None
        self._conn: Any = None
        self._log: Any = None

    def __enter__(self) -> HermesACP:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, coroutine: Any, timeout: float | None = None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout or self.timeout)
        except TimeoutError:
            future.cancel()
            raise AssertionError(
                f"hermes acp did not answer within {timeout or self.timeout:.0f} s\n"
                f"{self.log_tail()}"
            ) from None

    def start(self) -> None:
        import acp

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (closed in stop)

        async def open_connection() -> Any:
            self._stack = contextlib.AsyncExitStack()
            conn, _process = await self._stack.enter_async_context(
                acp.spawn_agent_process(
                    self.editor,
                    str(HERMES),
                    "acp",
                    env=self.home.env(self.extra_env),
                    cwd=str(self.home.path),
                    transport_kwargs={"stderr": self._log, "limit": 16 * 1024 * 1024},
                )
            )
            self._conn = conn
            return await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)

        try:
            self.info = self._run(open_connection(), 90)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self._loop is not None:
            if self._stack is not None:
                with contextlib.suppress(Exception):
                    self._run(self._stack.aclose(), 30)
                self._stack = None
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(10)
            self._loop.close()
            self._loop = None
        end_processes_under(self.home.path)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no acp log)"
        return "--- hermes acp stderr\n" + "\n".join(text.splitlines()[-lines:])

    def new_session(self, cwd: Path | None = None) -> str:
        answer = self._run(self._conn.new_session(cwd=str(cwd or self.home.path), mcp_servers=[]))
        self.session_id = answer.session_id
        return answer.session_id

    def load_session(self, session_id: str, cwd: Path | None = None) -> list[Any]:
        """``session/load``: the session from Hermes's state.db (it need not be in this
        process); the updates Hermes replayed, its history, before it answered."""
        seen = len(self.editor.updates)
        answer = self._run(
            self._conn.load_session(
                cwd=str(cwd or self.home.path), session_id=session_id, mcp_servers=[]
            )
        )
        assert answer is not None, f"hermes acp has no session {session_id}\n{self.log_tail()}"
        self.session_id = session_id
        return [u for sid, u in self.editor.updates[seen:] if sid == session_id]

    def prompt(self, text: str, session_id: str | None = None) -> ACPReply:
        import acp
        from acp.schema import AgentMessageChunk

        session = session_id or self.session_id
        assert session, "open a session first (new_session or load_session)"
        seen = len(self.editor.updates)
        started = time.monotonic()

        async def ask() -> Any:
            answer = await self._conn.prompt(session_id=session, prompt=[acp.text_block(text)])
            await asyncio.sleep(0.05)  # notifications sent just before the answer land
            return answer

        answer = self._run(ask())
        updates = [u for sid, u in self.editor.updates[seen:] if sid == session]
        reply = "".join(
            u.content.text
            for u in updates
            if isinstance(u, AgentMessageChunk) and getattr(u.content, "text", None)
        )
        return ACPReply(reply.strip(), answer.stop_reason, updates, time.monotonic() - started)

    def compact(self, session_id: str | None = None) -> ACPReply:
        """Hermes's manual compression over ACP. Its ACP command is ``/compact`` and it takes
        no focus (``/compress <focus>`` is not an ACP command: the model gets it as text)."""
        return self.prompt("/compact", session_id)


@dataclass
class TUIReply:
    text: str  # the message.complete text
    session_id: str  # Hermes's stored (state.db) session id after the turn
    events: list[dict[str, Any]]  # every event of the session while the turn ran
    seconds: float


class HermesTUI:
    """The TUI gateway, ``python -m tui_gateway.entry``: the backend Hermes's terminal UI spawns
    (``hermes_cli/tui_dist/entry.js``), newline-delimited JSON-RPC 2.0 over its stdin and
    stdout, with no terminal of its own. It announces itself with a ``gateway.ready`` event;
    ``session.create`` opens a session (a short live id; its ``stored_session_id`` is the
    state.db id), ``prompt.submit`` answers ``{"status": "streaming"}`` at once and the turn
    streams as events (``message.delta``, ``tool.start``, ``message.complete``, and a
    ``session.info`` with ``running: false`` once the session is idle again), and
    ``session.compress`` (``focus_topic``) compresses between turns.

    Use it as a context manager: on exit stdin is closed (the gateway exits on EOF) and
    whatever is left under the home ends."""

    def __init__(
        self,
        home: HermesHome,
        *,
        extra_env: dict[str, str] | None = None,
        timeout: float = 180,
    ) -> None:
        self.home = home
        self.extra_env = extra_env or {}
        self.timeout = timeout
        self.log_path = home.path / "tui-gateway.log"
        self.session_id: str | None = None  # the live id the gateway's methods take
        self.stored_session_id: str | None = None
        self.events: list[dict[str, Any]] = []
        self._responses: dict[int, dict[str, Any]] = {}
        self._changed = threading.Condition()
        self._ids = itertools.count(1)
        self._child = _Child(home.path)
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def __enter__(self) -> HermesTUI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (closed in stop)
        self._process = self._child.start(
            [str(HERMES_PYTHON), "-m", "tui_gateway.entry"],
            cwd=self.home.path,
            env=self.home.env(self.extra_env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        threading.Thread(target=self._read, args=(self._process.stdout,), daemon=True).start()
        try:
            self._wait(lambda: any(e.get("type") == "gateway.ready" for e in self.events), 90)
        except BaseException:
            self.stop()
            raise

    def _read(self, stdout: Any) -> None:
        for line in stdout:
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                if frame.get("method") == "event":
                    self.events.append(frame.get("params") or {})
                elif isinstance(frame.get("id"), int):
                    self._responses[frame["id"]] = frame
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _wait(self, ready: Callable[[], bool], timeout: float | None = None) -> None:
        seconds = timeout or self.timeout
        with self._changed:
            done = self._changed.wait_for(
                lambda: ready() or self._process is None or self._process.poll() is not None,
                seconds,
            )
            if not done or not ready():
                raise AssertionError(
                    f"the TUI gateway did not answer within {seconds:.0f} s "
                    f"(exit code {self._process and self._process.poll()})\n{self.log_tail()}"
                )

    def stop(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()  # the gateway ends its sessions and exits on EOF
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(10)
        self._child.stop(10)
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no TUI gateway log)"
        return "--- tui gateway stderr\n" + "\n".join(text.splitlines()[-lines:])

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One JSON-RPC call; its result, or the test fails with the gateway's error."""
        assert self._process is not None and self._process.stdin is not None
        rid = next(self._ids)
        frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self._process.stdin.write((json.dumps(frame) + "\n").encode())
        self._process.stdin.flush()
        self._wait(lambda: rid in self._responses)
        with self._changed:
            answer = self._responses.pop(rid)
        assert "error" not in answer, f"{method}: {answer['error']}\n{self.log_tail()}"
        return answer["result"]

    def create_session(self, **params: Any) -> str:
        result = self.call("session.create", cols=100, cwd=str(self.home.path), **params)
        self.session_id = result["session_id"]
        self.stored_session_id = result.get("stored_session_id")
        return self.session_id

    def _idle_after(self, start: int, session: str) -> bool:
        return any(
            e.get("type") == "session.info"
            and e.get("session_id") == session
            and not (e.get("payload") or {}).get("running")
            for e in self.events[start:]
        )

    def prompt(self, text: str, session_id: str | None = None) -> TUIReply:
        """One turn: submits ``text`` and waits for its ``message.complete`` and for the
        session to be idle again (a prompt sent while it runs would interrupt it)."""
        session = session_id or self.session_id
        assert session, "open a session first (create_session)"
        start = len(self.events)
        started = time.monotonic()
        status = self.call("prompt.submit", session_id=session, text=text)
        assert status.get("status") == "streaming", status

        def completed() -> dict[str, Any] | None:
            for event in self.events[start:]:
                if event.get("type") == "message.complete" and event.get("session_id") == session:
                    return event
            return None

        self._wait(lambda: completed() is not None)
        complete = completed() or {}
        at = self.events.index(complete)
        self._wait(lambda: self._idle_after(at, session))
        events = [e for e in self.events[start:] if e.get("session_id") == session]
        for event in events:
            stored = (event.get("payload") or {}).get("stored_session_id")
            if event.get("type") == "session.info" and stored:
                self.stored_session_id = stored
        reply = (complete.get("payload") or {}).get("text") or ""
        return TUIReply(reply, self.stored_session_id or "", events, time.monotonic() - started)

    def compress(self, focus: str | None = None, session_id: str | None = None) -> dict[str, Any]:
        """``session.compress`` with ``focus_topic``: what the TUI's ``/compress <focus>``
        sends; its result (``status``, ``before_messages``, ``after_messages``, …)."""
        session = session_id or self.session_id
        assert session, "open a session first (create_session)"
        params: dict[str, Any] = {"session_id": session}
        if focus:
            params["focus_topic"] = focus
        result = self.call("session.compress", **params)
        stored = (result.get("info") or {}).get("stored_session_id")
        if stored:
            self.stored_session_id = stored
        return result
