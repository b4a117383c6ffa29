"""Hermes Agent homes for tests and benchmarks, written the way Hermes writes them.

The schema is Hermes's own DDL at several versions (``ddl/v22.sql`` ... ``ddl/v31.sql``: its
tables, columns, flags, FTS tables and triggers); the writes follow its session store: content
encoding, in-place compaction (``archive_and_compact``: the compacted rows ``active=0,
compacted=1``, the originals of the copied tail superseded, head copies + summary + tail copies
inserted as fresh rows), rotation (``end_reason='compression'`` and a continuation child),
rewind, branches, delegates and resets (lineage markers in ``model_config``), guard columns and
memories. Columns a version lacks are simply not written.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from hermes_import.format import (
    CONTENT_JSON_PREFIX,
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
)

DDL = Path(__file__).resolve().parent / "ddl"
VERSIONS = (22, 23, 30, 31)
LATEST = 31


class HermesHome:
    """A folder laid out like ``~/.hermes``: ``state.db``, ``config.yaml``, ``memories/``."""

    def __init__(
        self,
        root: Path,
        version: int = LATEST,
        *,
        db: Path | None = None,
        replayed_copies: bool = False,
    ) -> None:
        if version not in VERSIONS:
            raise ValueError(f"schema versions available: {VERSIONS}")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.version = version
        self.db_path = db or self.root / "state.db"
        self.conn = sqlite3.connect(self.db_path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        if not self._tables():
            self.conn.executescript((DDL / f"v{version}.sql").read_text(encoding="utf-8"))
            self.conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        self.columns = {
            table: [row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")]
            for table in ("sessions", "messages")
        }
        self.clock = time.time() - 86_400 * 30
        # Write a compaction's copies as the real Hermes does, from the messages it replayed:
        # user and assistant text stripped (and a memory-context block dropped), tool results
        # over 200 characters pruned to a one-line summary (agent/context_compressor.py).
        self.replayed_copies = replayed_copies

    def _tables(self) -> set[str]:
        return {
            r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }

    def close(self) -> None:
        self.conn.close()

    def tick(self, seconds: float = 1.0) -> float:
        self.clock += seconds
        return self.clock

    def _insert(self, table: str, values: dict[str, Any]) -> int:
        values = {k: v for k, v in values.items() if k in self.columns[table]}
        names = ", ".join(f'"{k}"' for k in values)
        marks = ", ".join("?" for _ in values)
        cursor = self.conn.execute(
            f"INSERT INTO {table} ({names}) VALUES ({marks})",  # noqa: S608
            list(values.values()),
        )
        return int(cursor.lastrowid or 0)

    # -- sessions -------------------------------------------------------------------------

    def session(
        self,
        *,
        source: str = "cli",
        model: str = "anthropic/claude-opus-4.6",
        system_prompt: str | None = "You are Hermes, a helpful assistant.",
        parent: str | None = None,
        marker: str | None = None,
        model_config: dict | None = None,
        title: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """A new session row; ``marker`` ('_delegate_from', '_branched_from', '_reset_from') tags
        it as a separate child of ``parent``."""
        sid = session_id or time.strftime("%Y%m%d_%H%M%S_") + uuid.uuid4().hex[:6]
        config = dict(model_config or {})
        if marker:
            config[marker] = parent
        values: dict[str, Any] = {
            "id": sid,
            "source": source,
            "model": model,
            "model_config": json.dumps(config) if config else None,
            "parent_session_id": parent,
            "started_at": self.tick(),
            "title": title,
        }
        if system_prompt is not None:
            if "system_prompt_hash" in self.columns["sessions"] and "system_prompts" in (
                self._tables()
            ):
                digest = hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()
                self.conn.execute(
                    "INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)",
                    (digest, system_prompt),
                )
                values["system_prompt_hash"] = digest
            else:
                values["system_prompt"] = system_prompt
        self._insert("sessions", values)
        return sid

    def end(self, sid: str, reason: str) -> None:
        self.conn.execute(
            "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
            (self.tick(0.001), reason, sid),
        )

    def set_guard(
        self, sid: str, *, cooldown_until: float | None, fallback: int = 0, ineffective: int = 0
    ) -> None:
        sets = {"compression_failure_cooldown_until": cooldown_until}
        if "compression_fallback_streak" in self.columns["sessions"]:
            sets["compression_fallback_streak"] = fallback
        if "compression_ineffective_count" in self.columns["sessions"]:
            sets["compression_ineffective_count"] = ineffective
        assignments = ", ".join(f"{k} = ?" for k in sets)
        query = f"UPDATE sessions SET {assignments} WHERE id = ?"  # noqa: S608 - our names
        self.conn.execute(query, [*sets.values(), sid])

    # -- messages -------------------------------------------------------------------------

    @staticmethod
    def encode(content: Any) -> Any:
        if isinstance(content, (list, dict)):
            return CONTENT_JSON_PREFIX + json.dumps(content)
        return content

    def append(
        self,
        sid: str,
        role: str,
        content: Any,
        *,
        tool_calls: list | str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        timestamp: float | None = None,
        summary: bool = False,
        **extra: Any,
    ) -> int:
        """One message as ``append_message`` stores it (tool_calls as JSON text, empty = NULL)."""
        if isinstance(tool_calls, list):
            tool_calls = json.dumps(tool_calls) if tool_calls else None
        values = {
            "session_id": sid,
            "role": role,
            "content": self.encode(content),
            "tool_calls": tool_calls,
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "timestamp": timestamp if timestamp is not None else self.tick(),
            "active": 1,
            "compacted": 0,
            "_compressed_summary": 1 if summary else 0,
            "message_uid": uuid.uuid4().hex,
            **extra,
        }
        row_id = self._insert("messages", values)
        self.conn.execute(
            "UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,)
        )
        return row_id

    def active_rows(self, sid: str) -> list[sqlite3.Row]:
        self.conn.row_factory = sqlite3.Row
        try:
            return list(
                self.conn.execute(
                    "SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (sid,)
                )
            )
        finally:
            self.conn.row_factory = None

    def _copy(self, sid: str, row: sqlite3.Row, *, replayed: bool = True) -> int:
        keep = {
            k: row[k]
            for k in row.keys()  # noqa: SIM118 - a sqlite3.Row iterates values
            if k not in ("id", "session_id", "active", "compacted")
        }
        keep.pop("display_order", None)
        if replayed:
            keep["content"] = self._replayed(keep["role"], keep["content"], keep.get("tool_name"))
        return self._insert("messages", {**keep, "session_id": sid, "active": 1, "compacted": 0})

    def _replayed(self, role: str, content: Any, tool_name: str | None) -> Any:
        """A copy's content as the real Hermes writes it, where ``replayed_copies`` is set."""
        if not self.replayed_copies or not isinstance(content, str):
            return content
        if content.startswith(CONTENT_JSON_PREFIX):
            return content
        if role in ("user", "assistant"):
            while "<memory-context>" in content and "</memory-context>" in content:
                before, _, rest = content.partition("<memory-context>")
                content = before + rest.partition("</memory-context>")[2]
            return content.strip()
        if role == "tool" and len(content) > 200:
            lines = content.count("\n") + 1
            return f"[{tool_name or 'unknown'}] ran `command` -> exit 0, {lines} lines output"
        return content

    @staticmethod
    def _summary_role(head: list[sqlite3.Row], tail: list[sqlite3.Row]) -> str | None:
        """Hermes's choice: user after an assistant/tool head (or none), else assistant; flipped
        away from the first tail role where that still fits; None: nothing fits (merge)."""
        last = head[-1]["role"] if head else None
        role = "user" if last in (None, "assistant", "tool", "system") else "assistant"
        first_tail = tail[0]["role"] if tail else None
        if role == first_tail:
            flipped = "assistant" if role == "user" else "user"
            if last in (None, "system") and flipped == "assistant":
                return None
            if flipped == last:
                return None
            role = flipped
        return role

    def _handoff(
        self, target: str, head: list, tail: list, body: str, *, timestamp: float | None = None
    ) -> int:
        """Head copies, the summary (standalone, or merged into the first tail copy where no
        role fits) and tail copies, as fresh rows of ``target``; returns the carrier's id."""
        for row in head:
            self._copy(target, row)
        summary = f"{SUMMARY_PREFIX}\n{body}\n\n{SUMMARY_END_MARKER}"
        role = self._summary_role(head, tail)
        if role is not None or not tail:
            carrier = self.append(
                target, role or "user", summary, summary=True, timestamp=timestamp
            )
            for row in tail:
                self._copy(target, row)
            return carrier
        first = dict(tail[0])
        carried = self._replayed(first["role"], first["content"], first.get("tool_name")) or ""
        first["content"] = (
            f"{MERGED_PRIOR_CONTEXT_HEADER}\n{carried}\n\n{MERGED_SUMMARY_DELIMITER}\n\n{summary}"
        )
        first["_compressed_summary"] = 1
        carrier = self._insert(
            "messages",
            {
                **{k: v for k, v in first.items() if k not in ("id", "display_order")},
                "session_id": target,
                "active": 1,
                "compacted": 0,
            },
        )
        for row in tail[1:]:
            self._copy(target, row)
        return carrier

    def compact(
        self, sid: str, *, head: int = 3, tail: int = 4, body: str = "", tail_count: bool = True
    ) -> int:
        """An in-place compaction. ``tail_count=False`` is the older build that marked every
        active row compacted (the tail then exists twice: archived original, live copy)."""
        rows = self.active_rows(sid)
        first = rows[:head]
        last = rows[len(rows) - tail :] if tail else []
        superseded = {r["id"] for r in last} if tail_count else set()
        for row in rows:
            compacted = 0 if row["id"] in superseded else 1
            self.conn.execute(
                "UPDATE messages SET active = 0, compacted = ? WHERE id = ?", (compacted, row["id"])
            )
        carrier = self._handoff(sid, first, last, body or "## Historical Task Snapshot\nwork")
        self.conn.execute(
            "UPDATE sessions SET message_count = "
            "(SELECT count(*) FROM messages WHERE session_id = ? AND active = 1) WHERE id = ?",
            (sid, sid),
        )
        return carrier

    def rotate(self, sid: str, *, head: int = 3, tail: int = 4, body: str = "") -> str:
        """A compaction under ``in_place: false``: the parent is ended with 'compression' and
        left as it was; a continuation child holds the handoff."""
        parent = self.conn.execute(
            "SELECT source, model, model_config FROM sessions WHERE id = ?", (sid,)
        ).fetchone()
        prompt = self.system_prompt(sid)
        child = self.session(
            source=parent[0],
            model=parent[1],
            system_prompt=prompt,
            parent=sid,
            model_config=json.loads(parent[2]) if parent[2] else None,
        )
        rows = self.active_rows(sid)
        self._handoff(
            child, rows[:head], rows[len(rows) - tail :] if tail else [], body or "## Snapshot"
        )
        self.end(sid, "compression")
        return child

    def system_prompt(self, sid: str) -> str | None:
        if "system_prompts" in self._tables() and "system_prompt_hash" in self.columns["sessions"]:
            row = self.conn.execute(
                "SELECT COALESCE(p.prompt, s.system_prompt) FROM sessions s "
                "LEFT JOIN system_prompts p ON p.hash = s.system_prompt_hash WHERE s.id = ?",
                (sid,),
            ).fetchone()
        else:
            row = self.conn.execute(
                "SELECT system_prompt FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
        return row[0] if row else None

    def rewind(self, sid: str, target_id: int) -> None:
        """``/undo``: the target user row and everything after it leave the transcript."""
        self.conn.execute(
            "UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1 AND id >= ?",
            (sid, target_id),
        )
        if "rewind_count" in self.columns["sessions"]:
            self.conn.execute(
                "UPDATE sessions SET rewind_count = rewind_count + 1 WHERE id = ?", (sid,)
            )

    def branch(self, sid: str) -> str:
        """``/branch``: a child tagged ``_branched_from`` holding a copy of the active rows."""
        child = self.session(
            parent=sid, marker="_branched_from", system_prompt=self.system_prompt(sid)
        )
        for row in self.active_rows(sid):
            self._copy(child, row, replayed=False)
        return child

    # -- the rest of a home ---------------------------------------------------------------

    def memories(self, memory: list[str], user: list[str], root: Path | None = None) -> None:
        folder = (root or self.root) / "memories"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "MEMORY.md").write_text("\n§\n".join(memory), encoding="utf-8")
        (folder / "USER.md").write_text("\n§\n".join(user), encoding="utf-8")

    def config(self, text: str) -> None:
        (self.root / "config.yaml").write_text(text, encoding="utf-8")

    def profile(self, name: str, version: int | None = None) -> HermesHome:
        folder = self.root / "profiles" / name
        return HermesHome(folder, version or self.version)
