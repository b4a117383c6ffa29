"""Restoring an export (``sessions_app.services.export``) into this instance, whatever database
either runs on: ``manage.py import_sessions FILE.jsonl``.

Each session is restored in one transaction with its own id, its rows as they were (state,
provenance, timestamps, token counts), its memory blocks and what other apps exported about it
(compression events); message ids are new, and every link between rows is mapped to them. A
session already here (same id) is left alone and named, so a run can be repeated; one whose
external id another session of its channel holds is named too. Nothing here is deleted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from sessions_app import hooks
from sessions_app.bulk import keeping_timestamps
from sessions_app.models import Channel, MemoryBlock, Message, Session
from sessions_app.services.export import SESSION_FIELDS, STATE_FIELDS
from sessions_app.services.imported import insert_rows, row_defaults

BATCH = 2_000
# The message line's keys that are columns as they are (the links and times are mapped).
MESSAGE_COLUMNS = (
    "position",
    "role",
    "content",
    "content_parts",
    "tool_calls",
    "tool_call_id",
    "name",
    "is_summary",
    "is_fallback_summary",
    "covers_from_position",
    "covers_to_position",
    "archive_reason",
    "origin",
    *STATE_FIELDS,
)
TIMES = {"created_at", "archived_at", "rolled_back_at", "pruned_at"}
SESSION_TIMES = (
    "last_usage_at",
    "cooldown_until",
    "thrash_lock_until",
    "created_at",
    "updated_at",
    "last_activity_at",
    "last_reset_at",
    "archived_at",
)


class RestoreError(Exception):
    """The file cannot be restored from this line on (what came before it is restored)."""


@dataclass
class Restored:
    sessions: int = 0
    messages: int = 0
    skipped: list[str] = field(default_factory=list)
    channels_created: list[str] = field(default_factory=list)
    extras: Counter = field(default_factory=Counter)


@dataclass
class _Block:
    """One session's lines, as read."""

    header: dict[str, Any]
    line: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    extras: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise RestoreError(f"{where}: {value!r} is not an ISO 8601 time") from None


def _records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise RestoreError(f"line {number}: not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise RestoreError(
                f"line {number}: not a line of an export (no type); export_sessions writes "
                "channel, session and message lines"
            )
        yield number, record


def restore(lines: Iterable[str]) -> Restored:
    done = Restored()
    block: _Block | None = None
    known = set(hooks.exporters())
    for number, record in _records(lines):
        kind = record["type"]
        if kind == "channel":
            _restore_channel(record, number, done)
        elif kind == "session":
            if block is not None:
                _restore_session(block, done)
            block = _Block(record, number)
        elif kind != "message" and kind not in known:
            raise RestoreError(f"line {number}: unknown line type {kind!r}")
        elif block is None or record.get("session") != block.header.get("session"):
            raise RestoreError(f"line {number}: a {kind} line outside its session's lines")
        elif kind == "message":
            block.messages.append(record)
        else:
            block.extras.setdefault(kind, []).append(record)
    if block is not None:
        _restore_session(block, done)
    return done


def _channel(name: Any, where: str, done: Restored) -> Channel:
    if not isinstance(name, str) or not name or len(name) > 100:
        raise RestoreError(f"{where}: no channel name")
    channel, created = Channel.objects.get_or_create(name=name)
    if created:
        done.channels_created.append(name)
    return channel


def _restore_channel(record: dict[str, Any], number: int, done: Restored) -> None:
    where = f"line {number}"
    with transaction.atomic():
        channel = _channel(record.get("channel"), where, done)
        for block in record.get("memory") or []:
            if not MemoryBlock.objects.filter(
                channel=channel, session=None, label=block["label"]
            ).exists():
                _memory(block, where, channel=channel)


def _memory(block: dict[str, Any], where: str, **owner: Any) -> None:
    with keeping_timestamps([MemoryBlock]):
        MemoryBlock.objects.create(
            label=block["label"],
            text=block.get("text") or "",
            token_count=block.get("token_count") or 0,
            created_at=_time(block.get("created_at"), where) or timezone.now(),
            updated_at=_time(block.get("updated_at"), where) or timezone.now(),
            **owner,
        )


def _restore_session(block: _Block, done: Restored) -> None:
    """One session, all or nothing: a line that does not fit stops the run, naming it."""
    try:
        _write_session(block, done)
    except (KeyError, TypeError, ValueError, ValidationError, DatabaseError) as exc:
        what = f"{type(exc).__name__}: {exc}"[:300]
        raise RestoreError(
            f"line {block.line}: session {block.header.get('session')} does not fit ({what}); "
            "nothing of it was written"
        ) from None


def _write_session(block: _Block, done: Restored) -> None:
    header, where = block.header, f"line {block.line}"
    session_id = header.get("session")
    if not isinstance(session_id, str):
        raise RestoreError(f"{where}: the session line has no session id")
    try:
        present = Session.objects.filter(pk=session_id).exists()
    except ValidationError:
        raise RestoreError(f"{where}: {session_id!r} is not a session id") from None
    if present:
        done.skipped.append(f"{session_id}: already here (restored before?); left as it is")
        return
    with transaction.atomic(), keeping_timestamps([Message, Session]):
        channel = _channel(header.get("channel"), where, done)
        external_id = header.get("external_id")
        if (
            external_id
            and Session.objects.filter(channel=channel, external_id=external_id).exists()
        ):
            done.skipped.append(
                f"{session_id}: channel {channel.name} already has a session with external id "
                f"{external_id!r}; left out"
            )
            return
        values = {name: header.get(name) for name in SESSION_FIELDS if name in header}
        for name in SESSION_TIMES:
            values[name] = _time(values.get(name), where)
        now = timezone.now()
        for name in ("created_at", "updated_at", "last_activity_at"):  # never empty
            values[name] = values[name] or now
        parent = header.get("parent")
        try:
            session = Session.objects.create(
                id=session_id,
                channel=channel,
                parent_id=parent if parent and Session.objects.filter(pk=parent).exists() else None,
                **values,
            )
        except (TypeError, ValueError, ValidationError) as exc:
            raise RestoreError(f"{where}: the session line does not fit ({exc})") from None
        for memory in header.get("memory") or []:
            _memory(memory, where, session=session)
        ids = _messages(session, block.messages, where)
        for kind, records in block.extras.items():
            load = hooks.exporters()[kind][1]
            done.extras[kind] += load(session, records, ids)
    done.sessions += 1
    done.messages += len(block.messages)


def _messages(session: Session, records: list[dict[str, Any]], where: str) -> dict[int, int]:
    """Insert the rows in batches; then the links between them, by their new ids."""
    ids: dict[int, int] = {}
    batch: list[dict[str, Any]] = []
    olds: dict[int, int] = {}  # position -> old id, for the batch
    links: list[tuple[int, Any, Any]] = []

    def flush() -> None:
        for position, pk in insert_rows(batch).items():
            ids[olds[position]] = pk
        batch.clear()
        olds.clear()

    for record in records:
        values = dict(row_defaults())
        values.update({name: record.get(name) for name in MESSAGE_COLUMNS if name in record})
        for name in TIMES:
            values[name] = _time(record.get(name), f"{where}, message {record.get('id')}")
        values.update(
            session_id=session.pk,
            channel_id=session.channel_id,
            rollback_reason=record.get("rollback_reason") or "",
            created_at=values["created_at"] or session.created_at,
        )
        if record.get("summarized_by") or record.get("continues"):
            links.append((record["id"], record.get("summarized_by"), record.get("continues")))
        # Rows are matched to their new ids by position: a summary shares its position with
        # the first original it replaced, so a repeated position starts a new batch.
        if len(batch) >= BATCH or values["position"] in olds:
            flush()
        olds[values["position"]] = record["id"]
        batch.append(values)
    flush()
    linked = [
        Message(
            pk=ids[old],
            summarized_by_id=ids.get(summary) if summary else None,
            continues_id=ids.get(continues) if continues else None,
        )
        for old, summary, continues in links
    ]
    Message.objects.bulk_update(linked, ["summarized_by", "continues"], batch_size=500)
    return ids
