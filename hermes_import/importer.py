"""One Hermes conversation written into the store, in its own transaction.

The first import and every re-run take the same path: the conversation's rows are planned from
Hermes's whole chain, then compared with what an earlier run stored (rows are known by their
Hermes id, kept in ``Message.origin``). New rows are appended after the existing ones (Hermes's
ids only grow, so order holds); rows whose state Hermes changed since (a later compaction
archived them, an ``/undo`` took them back) are updated; nothing is duplicated or deleted.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from hermes_import.mapping import ARCHIVED, LIVE, ROLLED_BACK, Conversation, Planned
from hermes_import.models import ImportedSession
from hermes_import.provenance import infer
from sessions_app import tokens
from sessions_app.bulk import keeping_timestamps
from sessions_app.models import Channel, Message, Session
from sessions_app.selectors.messages import last_position, origin_ids
from sessions_app.selectors.sessions import lock_session
from sessions_app.services import imported

BATCH = 2_000
# What a later Hermes run can change about a row already imported: its kind and its links.
RECONCILED = (
    "active",
    "compressed",
    "summarized_by",
    "continues",
    "archive_reason",
    "archived_at",
    "rollback_reason",
    "rolled_back_at",
)


@dataclass
class Outcome:
    """What importing one conversation did."""

    created: bool = False
    updated_rows: int = 0
    kinds: Counter = field(default_factory=Counter)


def _when(epoch: float | None) -> dt.datetime | None:
    if epoch is None:
        return None
    try:
        return dt.datetime.fromtimestamp(float(epoch), tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _flags(row: Planned) -> dict[str, Any]:
    if row.kind == LIVE:
        return {"active": True, "compressed": False}
    if row.kind == ARCHIVED:
        return {"active": False, "compressed": True}
    return {"active": False, "compressed": False}


class _Tokens:
    """Token counts for one conversation's rows, as ``tokens.count_message`` counts them (an
    imported row has no ``name``): one counter for the session's model, and one count per
    distinct text, since Hermes's copies repeat their originals."""

    def __init__(self, model: str) -> None:
        self.counter = tokens.counter_for(model)
        self.seen: dict[str, int] = {}

    def __call__(self, message: dict[str, Any]) -> int:
        text = tokens.message_text(message)
        count = self.seen.get(text)
        if count is None:
            count = self.seen[text] = tokens.TOKENS_PER_MESSAGE + self.counter.count_text(text)
        return count


def _values(
    session: Session, row: Planned, position: int, ids: dict[int, int], count: _Tokens
) -> dict[str, Any]:
    """The row's column values by attribute name: every column, as the batch INSERT writes
    them (no model instance: building one per row cost more than its INSERT)."""
    when = _when(row.timestamp)
    if row.copied is not None and row.timestamp is not None and row.copied > row.timestamp:
        # Hermes's copy keeps its original's timestamp; here it is written when Hermes wrote
        # it, at its compaction (so the live-token chart does not count a row twice).
        row.origin["timestamp"] = row.timestamp
        when = _when(row.copied)
    values = dict(imported.row_defaults())
    values.update(
        session_id=session.pk,
        channel_id=session.channel_id,
        position=position,
        role=row.role,
        content=row.text,
        content_parts=row.parts,
        tool_calls=row.tool_calls,
        tool_call_id=row.tool_call_id,
        origin=row.origin,
        is_summary=row.summary,
        summarized_by_id=ids.get(row.summarized_by) if row.summarized_by else None,
        continues_id=ids.get(row.continues) if row.continues else None,
        created_at=when or session.created_at,
        **_flags(row),
    )
    if row.kind == ARCHIVED:
        values["archive_reason"] = Message.ArchiveReason.COMPRESSION
        values["archived_at"] = _when(row.ended) or when
    elif row.kind == ROLLED_BACK:
        values["rollback_reason"] = "hermes"
        values["rolled_back_at"] = when
    # Every row carries what it cost in the live context while it was there, as this
    # service's own rows do after a compression archives them. (What Message.as_openai sends
    # for such a row: nothing of it is pruned, named or extra.)
    sent: dict[str, Any] = {
        "role": row.role,
        "content": row.parts if row.parts is not None else row.text,
    }
    if row.tool_calls:
        sent["tool_calls"] = row.tool_calls
    if row.tool_call_id:
        sent["tool_call_id"] = row.tool_call_id
    values["token_count"] = count(sent)
    return values


def import_conversation(
    channel: Channel,
    store: str,
    conversation: Conversation,
    hermes_sessions: dict[str, dict[str, Any]],
    rows: list[Planned],
    fingerprints: dict[str, str],
) -> Outcome:
    """Write one conversation (all links) and record its links, in one transaction."""
    infer(conversation, rows)
    tip = hermes_sessions[conversation.tip]
    root = hermes_sessions[conversation.root]
    outcome = Outcome()
    with transaction.atomic(), keeping_timestamps([Message, Session]):
        link = (
            ImportedSession.objects.filter(store=store, hermes_id__in=conversation.links)
            .select_related("session")
            .first()
        )
        if link is None:
            now = dt.datetime.now(tz=dt.UTC)
            session = imported.open_imported(
                channel,
                model=tip.get("model") or "",
                title=tip.get("title") or "",
                created_at=_when(root.get("started_at")) or now,
                last_activity_at=_when(tip.get("started_at")) or now,
            )
            outcome.created = True
        else:
            session = lock_session(link.session_id)
        existing = origin_ids(session)
        if outcome.created and tip.get("prompt"):
            imported.insert_rows([_system_prompt(session, conversation.tip, tip["prompt"])])
        position = last_position(session)
        ids = dict(existing)
        count = _Tokens(session.model)
        new = [r for r in rows if r.hermes_id not in existing]
        # Summaries first, newest first: an older summary may be archived under a newer one.
        positions = {}
        for row in new:
            position += 1
            positions[row.hermes_id] = position
        for row in sorted((r for r in new if r.summary), key=lambda r: -r.hermes_id):
            values = _values(session, row, positions[row.hermes_id], ids, count)
            values["continues_id"] = None  # set below, once what it continues exists
            ids[row.hermes_id] = imported.insert_rows([values])[values["position"]]
        batch: list[dict[str, Any]] = []
        pending: set[int] = set()
        for row in new:
            if row.summary:
                continue
            if len(batch) >= BATCH or (row.continues in pending):
                _flush(batch, ids)
                pending.clear()
            batch.append(_values(session, row, positions[row.hermes_id], ids, count))
            pending.add(row.hermes_id)
        _flush(batch, ids)
        outcome.updated_rows = _reconcile(session, rows, ids, existing)
        for row in new:
            outcome.kinds[("summary " if row.summary else "") + row.kind] += 1
        _finish(session, conversation, hermes_sessions, store, fingerprints)
    return outcome


def _flush(batch: list[dict[str, Any]], ids: dict[int, int]) -> None:
    """Insert the batch; each row's id is then known by its Hermes id."""
    by_position = {values["position"]: values["origin"]["id"] for values in batch}
    for position, pk in imported.insert_rows(batch).items():
        ids[by_position[position]] = pk
    batch.clear()


def _system_prompt(session: Session, hermes_id: str, prompt: str) -> dict[str, Any]:
    """Hermes keeps a session's system prompt on the session; here it is the row at 0."""
    values = dict(imported.row_defaults())
    values.update(
        session_id=session.pk,
        channel_id=session.channel_id,
        position=0,
        role=Message.Role.SYSTEM,
        content=prompt,
        origin={"system": "hermes", "session": hermes_id, "system_prompt": True},
        token_count=tokens.count_message({"role": "system", "content": prompt}, session.model),
        created_at=session.created_at,
    )
    return values


def _reconcile(
    session: Session, rows: list[Planned], ids: dict[int, int], existing: dict[int, int]
) -> int:
    """Bring every row to its planned state: links of new summaries, and existing rows whose
    kind Hermes changed since the last run."""
    wanted = {}
    for row in rows:
        # New rows were written as planned, except a summary's link to the row it continues
        # (summaries go first); existing rows may have changed in Hermes since.
        if row.hermes_id in existing or (row.summary and row.continues):
            wanted[ids[row.hermes_id]] = (
                _flags(row),
                ids.get(row.summarized_by) if row.summarized_by else None,
                ids.get(row.continues) if row.continues else None,
                row.kind,
                _when(row.ended),
            )
    if not wanted:
        return 0
    changed = []
    now = dt.datetime.now(tz=dt.UTC)
    fields = ("pk", *RECONCILED)
    stored = imported.stored_rows(session, fields, only=None if existing else list(wanted))
    for message in stored:
        if message.pk not in wanted:
            continue
        flags, summary, continues, kind, ended = wanted[message.pk]
        state = (message.active, message.compressed, message.summarized_by_id, message.continues_id)
        goal = (flags["active"], flags["compressed"], summary, continues)
        if state == goal:
            continue
        message.active, message.compressed = flags["active"], flags["compressed"]
        message.summarized_by_id, message.continues_id = summary, continues
        if kind == ARCHIVED and message.archive_reason is None:
            message.archive_reason = Message.ArchiveReason.COMPRESSION
            message.archived_at = message.archived_at or ended or now
        if kind == ROLLED_BACK and not message.rollback_reason:
            message.rollback_reason = "hermes"
            message.rolled_back_at = message.rolled_back_at or now
        changed.append(message)
    imported.save_states(changed, RECONCILED)
    known = set(existing.values())
    return sum(1 for m in changed if m.pk in known)


def _finish(
    session: Session,
    conversation: Conversation,
    hermes_sessions: dict[str, dict[str, Any]],
    store: str,
    fingerprints: dict[str, str],
) -> None:
    """Counters, summary ranges, guard state and the record of each link."""
    tip = hermes_sessions[conversation.tip]
    imported.settle(
        session,
        external_id=conversation.tip,
        title=(tip.get("title") or session.title or "")[:300],
        cooldown_until=_when(tip.get("compression_failure_cooldown_until")),
        failure_streak=int(tip.get("compression_fallback_streak") or 0),
        ineffective_streak=int(tip.get("compression_ineffective_count") or 0),
    )
    notes = "\n".join(conversation.notes)
    for hermes_id in conversation.links:
        ImportedSession.objects.update_or_create(
            store=store,
            hermes_id=hermes_id,
            defaults={
                "session": session,
                "conversation_root": conversation.root,
                "fingerprint": fingerprints.get(hermes_id, "0:0:0:0"),
                "notes": notes,
            },
        )
