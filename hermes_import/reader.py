"""Reading a Hermes Agent ``state.db``: read-only, by column name, never its optional tokenizer.

Hermes adds columns declaratively (a missing one is added on its next writable open), so what a
store holds is decided by the columns present, not by ``schema_version``; a missing column reads
as its default. Only the base tables are read: a store built with the ``cjk_unicode61`` extension
opens and reads fine as long as its FTS tables are left alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The newest schema this importer knows; a newer store is refused rather than half-understood.
NEWEST_KNOWN_SCHEMA = 31
REQUIRED = {
    "sessions": {"id", "started_at"},
    "messages": {"id", "session_id", "role", "content"},
}
MESSAGE_DEFAULTS: dict[str, Any] = {
    "tool_call_id": None,
    "tool_calls": None,
    "tool_name": None,
    "timestamp": None,
    "finish_reason": None,
    "reasoning": None,
    "reasoning_content": None,
    "reasoning_details": None,
    "codex_reasoning_items": None,
    "codex_message_items": None,
    "platform_message_id": None,
    "_compressed_summary": 0,
    "active": 1,
    "compacted": 0,
    "display_kind": None,
    # Hermes 0.19.0 (schema version 22) writes these; older stores lack some.
    "api_content": None,
    "effect_disposition": None,
    "token_count": None,
    "observed": 0,
}
SESSION_DEFAULTS: dict[str, Any] = {
    "source": "",
    "model": None,
    "model_config": None,
    "system_prompt": None,
    "system_prompt_hash": None,
    "parent_session_id": None,
    "ended_at": None,
    "end_reason": None,
    "title": None,
    "compression_failure_cooldown_until": None,
    "compression_fallback_streak": 0,
    "compression_ineffective_count": 0,
}


class HermesReadError(Exception):
    """The store cannot be read; the message says what and what to do."""


class Repaired(str):
    """Text that was not valid UTF-8 in the store (a lone surrogate, a stray byte), decoded with
    U+FFFD where it could not be read."""


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Repaired(raw.decode("utf-8", "replace"))


@dataclass(frozen=True)
class Fingerprint:
    rows: int
    active: int
    compacted: int
    last_id: int

    def key(self) -> str:
        return f"{self.rows}:{self.active}:{self.compacted}:{self.last_id}"


class HermesStore:
    """One ``state.db``, opened read-only (or immutable on a read-only medium)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise HermesReadError(f"{self.path}: no such file")
        self.conn = self._open()
        self.conn.text_factory = _decode
        try:
            tables = {
                r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        except sqlite3.DatabaseError as exc:
            raise HermesReadError(f"{self.path}: not a readable SQLite database ({exc})") from None
        missing = [t for t in REQUIRED if t not in tables]
        if missing:
            raise HermesReadError(
                f"{self.path}: not a Hermes Agent state.db (no {', '.join(missing)} table)"
            )
        self.columns = {t: self._columns(t) for t in REQUIRED}
        for table, needed in REQUIRED.items():
            lacking = needed - set(self.columns[table])
            if lacking:
                raise HermesReadError(
                    f"{self.path}: not a Hermes Agent state.db ({table} has no "
                    f"{', '.join(sorted(lacking))} column)"
                )
        self.has_prompts = "system_prompts" in tables
        self.version = self._version(tables)
        if self.version is not None and self.version > NEWEST_KNOWN_SCHEMA:
            raise HermesReadError(
                f"{self.path}: schema version {self.version} is newer than this importer knows "
                f"(up to {NEWEST_KNOWN_SCHEMA}); nothing was imported"
            )
        self.identity = self._identity(tables)

    def _open(self) -> sqlite3.Connection:
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=5)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text:
                raise HermesReadError(
                    f"{self.path}: the database is locked by another process (a Hermes Agent "
                    "holding a write lock); try again when it is idle"
                ) from None
            # A read-only folder cannot hold the WAL's shared-memory file: read it as immutable.
            try:
                conn = sqlite3.connect(f"{uri}?immutable=1", uri=True)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.DatabaseError:
                raise HermesReadError(f"{self.path}: cannot be opened ({text})") from None
        except sqlite3.DatabaseError as exc:
            raise HermesReadError(f"{self.path}: not a readable SQLite database ({exc})") from None

    def _columns(self, table: str) -> list[str]:
        return [row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")]

    def _version(self, tables: set[str]) -> int | None:
        if "schema_version" not in tables:
            return None
        row = self.conn.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def _identity(self, tables: set[str]) -> str:
        """The store's own id where Hermes wrote one, else its resolved path."""
        if "state_meta" in tables:
            row = self.conn.execute(
                "SELECT value FROM state_meta WHERE key = 'store_instance_id'"
            ).fetchone()
            if row and row[0]:
                return f"hermes:{row[0]}"
        return f"file:{self.path.resolve()}"

    def close(self) -> None:
        self.conn.close()

    def _select(self, table: str, defaults: dict[str, Any]) -> str:
        present = set(self.columns[table])
        parts = []
        for name in [*sorted(REQUIRED[table]), *defaults]:
            if name in present:
                parts.append(f'"{name}"')
            else:
                parts.append(f'{_literal(defaults.get(name))} AS "{name}"')
        return ", ".join(dict.fromkeys(parts))

    def sessions(self) -> dict[str, dict[str, Any]]:
        """Every session row (a store holds thousands, not millions), with its system prompt."""
        select = self._select("sessions", SESSION_DEFAULTS)
        self.conn.row_factory = sqlite3.Row
        try:
            rows = [dict(r) for r in self.conn.execute(f"SELECT {select} FROM sessions")]  # noqa: S608
            prompts: dict[str, str] = {}
            if self.has_prompts:
                prompts = dict(self.conn.execute("SELECT hash, prompt FROM system_prompts"))
        finally:
            self.conn.row_factory = None
        for row in rows:
            prompt = prompts.get(row["system_prompt_hash"] or "")
            row["prompt"] = prompt if prompt is not None else row["system_prompt"]
        return {row["id"]: row for row in rows}

    def fingerprints(self) -> dict[str, Fingerprint]:
        """Per session: rows, active rows, compacted rows and the newest id -- one pass over the
        table, so a re-run can skip every session Hermes has not touched since."""
        active = "active" if "active" in self.columns["messages"] else "1"
        compacted = "compacted" if "compacted" in self.columns["messages"] else "0"
        out = {}
        for sid, rows, n_active, n_compacted, last in self.conn.execute(
            f"SELECT session_id, count(*), sum({active}), sum({compacted}), max(id) "  # noqa: S608
            "FROM messages GROUP BY session_id"
        ):
            out[sid] = Fingerprint(rows, int(n_active or 0), int(n_compacted or 0), last)
        return out

    def fingerprint_each(
        self, session_ids: list[str]
    ) -> tuple[dict[str, Fingerprint], dict[str, str]]:
        """Fingerprints one session at a time, for a store the one-pass scan could not read (a
        damaged page): the sessions whose rows can be read, and why the others cannot."""
        active = "active" if "active" in self.columns["messages"] else "1"
        compacted = "compacted" if "compacted" in self.columns["messages"] else "0"
        sql = (
            f"SELECT count(*), sum({active}), sum({compacted}), max(id) "  # noqa: S608
            "FROM messages WHERE session_id = ?"
        )
        out, broken = {}, {}
        for sid in session_ids:
            try:
                rows, n_active, n_compacted, last = self.conn.execute(sql, (sid,)).fetchone()
            except sqlite3.DatabaseError as exc:
                broken[sid] = str(exc)
                continue
            if rows:
                out[sid] = Fingerprint(rows, int(n_active or 0), int(n_compacted or 0), last)
        return out, broken

    def messages(self, session_ids: list[str]) -> Iterator[dict[str, Any]]:
        """The rows of these sessions in Hermes's canonical order: by id, never by timestamp."""
        select = self._select("messages", MESSAGE_DEFAULTS)
        marks = ", ".join("?" for _ in session_ids)
        self.conn.row_factory = sqlite3.Row
        try:
            cursor = self.conn.execute(
                f"SELECT {select} FROM messages WHERE session_id IN ({marks}) ORDER BY id",  # noqa: S608
                session_ids,
            )
            for row in cursor:
                yield dict(row)
        finally:
            self.conn.row_factory = None


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    return str(int(value)) if isinstance(value, (bool, int)) else f"'{value}'"
