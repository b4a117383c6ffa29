"""The real Hermes Agent (``hermes-agent`` 0.19.0, installed by ``bin/peers`` into
``tests/peers/hermes/.venv``) driven as its users drive it, in a temporary ``HERMES_HOME``,
against the loopback OpenAI-compatible server.

Hermes always streams, tool calls included, and decides its own compaction from the
``usage.prompt_tokens`` the server reports; :class:`ScriptedAgent` plays the model: it answers
Hermes's summary requests with a summary, runs a shell command through Hermes's ``terminal`` tool
when the user's message asks for one (``run `echo hi```), and reports whatever prompt size the
test wants. Where the peer is not installed every test that needs it skips, saying why.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
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
    e.g. ``{"compression": {"in_place": False}}``."""

    def __init__(
        self,
        path: Path,
        base_url: str,
        *,
        context_length: int = 200_000,
        config: dict[str, Any] | None = None,
    ) -> None:
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
        for key, value in (config or {}).items():
            if isinstance(value, dict) and isinstance(settings.get(key), dict):
                settings[key] = {**settings[key], **value}
            else:
                settings[key] = value
        self.config = settings
        (self.path / "config.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")

    @property
    def state_db(self) -> Path:
        return self.path / "state.db"

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
        """SIGTERM (Hermes shuts down its tools and sessions on it), then SIGTERM and at last
        SIGKILL, by pid, to whatever is left under the home; the exit code of the process
        (Hermes's gateway exits 1 on a signal, asking systemd to restart it)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.poll() is None:
                process.send_signal(sig)
            for pid in processes_under(self.home):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 5
            while processes_under(self.home) and time.monotonic() < deadline:
                time.sleep(0.1)
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
        self, message: str, conversation: str = "default", *, timeout: float = 180
    ) -> GatewayTurn:
        """One user turn of ``conversation``; fails the test with the gateway's log if Hermes
        does not answer 200 with a reply."""
        # A new conversation gets an id of its own: without one Hermes derives it from the
        # first user message, so two conversations that open alike would share a session.
        session = self.sessions.setdefault(conversation, f"gw_{secrets.token_hex(8)}")
        headers = {"X-Hermes-Session-Id": session}
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
