"""What the plugin remembers, on disk under ``HERMES_HOME/hermes-memory/``.

Every ``hermes chat -q`` is a new process and a gateway runs many agents at once, so nothing
lives in memory: one directory per conversation (named after its first Hermes session id, which
is also the service session's ``external_id``) holds ``state.json`` (written whole, atomically)
and ``spool.jsonl`` (batches of messages waiting for the service, appended, each with its
``sequence``); ``ids/<hermes session id>`` names the conversation a Hermes id belongs to, so a
rotation's new id continues the same conversation. A conversation is changed only under its
``lock`` file (``flock``), taken and released within one call.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def safe_name(hermes_id: str) -> str:
    name = _UNSAFE.sub("_", hermes_id)[:120].lstrip(".")
    return name or "_"


@dataclass
class State:
    """``sent``: messages given a sequence so far (the next batch's ``sequence``); ``acked``: the
    service's ``next_sequence`` as last answered; ``base``: how many leading messages of Hermes's
    working list the service already has, ``anchor`` the signature of the last of them and
    ``recent`` those of the last few (to find where Hermes's list went back to after an undo);
    ``compressions`` the service's count as last seen and ``aligned`` the count Hermes's list
    reflects; ``due`` the service's last "compress now"; ``stale`` the service changed the live
    context on its own (a model error it compressed for, a reset)."""

    external_id: str
    service_id: str | None = None
    hermes_ids: list[str] = field(default_factory=list)
    sent: int = 0
    acked: int = 0
    base: int = 0
    anchor: str | None = None
    recent: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = None
    due: bool = False
    stale: bool = False
    compressions: int = 0
    aligned: int = 0
    model: str = ""
    context_length: int = 0
    system_prompt: str | None = None
    away_until: float = 0.0
    away_reason: str | None = None
    compress_away_logged: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class Batch:
    sequence: int
    messages: list[dict[str, Any]]
    usage: dict[str, int] | None = None

    @property
    def end(self) -> int:
        return self.sequence + len(self.messages)


class Conversation:
    """One conversation's directory; use :meth:`Store.open` to get one under its lock."""

    def __init__(self, path: Path, state: State) -> None:
        self.path = path
        self.state = state

    @property
    def spool_path(self) -> Path:
        return self.path / "spool.jsonl"

    def save(self) -> None:
        _write_atomic(self.path / "state.json", json.dumps(asdict(self.state), indent=1))

    def spool(self, messages: list[dict[str, Any]], usage: dict[str, int] | None) -> Batch:
        """Give ``messages`` the next sequence and append them to the spool (before the state
        says they were sent: a crash in between spools them twice under one sequence, which the
        service's sequence check turns into one copy)."""
        batch = Batch(self.state.sent, messages, usage)
        with open(self.spool_path, "a", encoding="utf-8") as spool:
            spool.write(json.dumps(asdict(batch), ensure_ascii=False) + "\n")
            spool.flush()
            os.fsync(spool.fileno())
        self.state.sent = batch.end
        return batch

    def pending(self) -> list[Batch]:
        """Spooled batches the service has not acknowledged, in order."""
        if not self.spool_path.exists():
            return []
        batches = []
        with open(self.spool_path, encoding="utf-8") as spool:
            for line in spool:
                try:
                    batch = Batch(**json.loads(line))
                except (ValueError, TypeError):
                    continue  # a line cut short by a crash: its batch was never "sent"
                if batch.end > self.state.acked and batch.sequence < self.state.sent:
                    batches.append(batch)
        return batches

    def rewrite_spool(self, batches: list[Batch]) -> None:
        text = "".join(json.dumps(asdict(b), ensure_ascii=False) + "\n" for b in batches)
        _write_atomic(self.spool_path, text)

    def drop_delivered(self) -> None:
        if self.state.acked >= self.state.sent and self.spool_path.exists():
            self.spool_path.unlink()


class Store:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _link(self, hermes_id: str) -> Path:
        return self.root / "ids" / safe_name(hermes_id)

    def conversation_of(self, hermes_id: str) -> str | None:
        try:
            return self._link(hermes_id).read_text(encoding="utf-8").strip() or None
        except OSError:
            return None

    def link(self, hermes_id: str, name: str) -> None:
        path = self._link(hermes_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, name)

    @contextlib.contextmanager
    def open(self, hermes_id: str) -> Iterator[Conversation]:
        """The conversation ``hermes_id`` belongs to (a new one named after it), locked; its
        state is saved when the block ends without error."""
        name = self.conversation_of(hermes_id)
        if name is None:
            name = safe_name(hermes_id)
            self.link(hermes_id, name)
        with self._locked(name, hermes_id) as conversation:
            yield conversation

    @contextlib.contextmanager
    def existing(self, hermes_id: str) -> Iterator[Conversation | None]:
        """As :meth:`open`, but None for an id that has no conversation yet."""
        name = self.conversation_of(hermes_id)
        if name is None:
            yield None
            return
        with self._locked(name, hermes_id) as conversation:
            yield conversation

    @contextlib.contextmanager
    def _locked(self, name: str, hermes_id: str) -> Iterator[Conversation]:
        path = self.root / "conversations" / name
        path.mkdir(parents=True, exist_ok=True)
        with open(path / "lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state_file = path / "state.json"
                try:
                    state = State.from_json(json.loads(state_file.read_text(encoding="utf-8")))
                except (OSError, ValueError, TypeError):
                    # A new conversation (or one whose state was lost: the service's
                    # sequence check then skips what it already holds).
                    first = hermes_id if safe_name(hermes_id) == name else name
                    state = State(external_id=first)
                if hermes_id not in state.hermes_ids:
                    state.hermes_ids.append(hermes_id)
                conversation = Conversation(path, state)
                yield conversation
                conversation.save()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
