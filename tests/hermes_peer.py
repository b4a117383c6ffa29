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

import json
import os
import re
import subprocess
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
