"""Erasure on request: the one path that deletes conversation data (``manage.py erase`` and the
session admin's "Erase" action both call it).

What goes: the chosen sessions *and every continuation of them* (a continuation copies its
parent's live rows, and ``Session.parent`` protects the parent), every message of theirs, and
every row of any app that points at them (compression events, import links, ...: found through
the models' foreign keys, so a new table hanging off sessions or messages is erased too). The
search indexes follow the rows: SQLite's FTS5 tables and their recent twins through the delete
trigger, PostgreSQL's GIN indexes because they index the table itself; the search app's hooks
then purge what deleted rows leave on disk. Erasing by external id takes the whole chain: the id
moved from session to continuation, and every link of it holds the person's words.

It works in batches, one short write transaction each, so a session of 100,000 messages never
holds the write lock for long. The audit entry is written first (``running``, with the session
ids and what is planned) and each batch adds its counts to it in the same transaction: a crash
leaves an exact record, and :func:`resume` (``manage.py erase --resume``) finishes the job. The
audit entry holds ids and counts, never content, titles or the external id.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from typing import cast
from uuid import UUID

from django.apps import apps
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connection, transaction
from django.db.models import Count, Model
from django.utils import timezone

from sessions_app import audit, hooks
from sessions_app.models import AuditEntry, Channel, Message, Session
from sessions_app.services.errors import NotFound, StateConflict

BATCH = 500
# After each batch the erasure steps aside this long: writers waiting at the write gate (which
# polls every few milliseconds) get their turn instead of finding the next batch holding it.
PAUSE_SECONDS = 0.01
KINDS = [k.value for k in Message.Kind]
# Held by the erasure: no compression may claim a session while it goes.
CLAIM = timedelta(days=3650)


@dataclass
class SessionInScope:
    session: Session
    why: str  # "chosen", "continuation of …", "earlier link of the chain"
    messages: dict[str, int]


@dataclass
class ErasePlan:
    """What an erasure will delete, for the confirmation and the audit entry."""

    scope: dict[str, str | int]
    sessions: list[SessionInScope]
    related: dict[str, int] = field(default_factory=dict)

    @property
    def session_ids(self) -> list[str]:
        return [str(s.session.pk) for s in self.sessions]

    def message_counts(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for item in self.sessions:
            total.update(item.messages)
        return {kind: total[kind] for kind in KINDS}

    def describe(self) -> list[str]:
        """The confirmation, one line each: channel, each session (id, title, messages by
        kind), the rows hanging off them. Shown to the operator, never stored."""
        counts = self.message_counts()
        lines = [
            f"{len(self.sessions)} session(s), {sum(counts.values()):,} message(s) "
            f"({', '.join(f'{v:,} {k}' for k, v in counts.items())}) will be deleted for good, "
            "from the database and every search index:"
        ]
        for item in self.sessions:
            s = item.session
            kinds = ", ".join(f"{v:,} {k}" for k, v in item.messages.items() if v) or "none"
            lines.append(
                f"  channel {s.channel.name} · session {s.pk} “{s.title or '(untitled)'}” "
                f"· {item.why} · messages: {kinds}"
            )
        for name, n in self.related.items():
            lines.append(f"  and {n:,} {name} row(s)")
        if any(item.why != "chosen" for item in self.sessions):
            lines.append(
                "Continuations are included: each carries on its parent's conversation with "
                "copies of its rows."
            )
        return lines


def _dependents() -> list[tuple[type[Model], str, bool, type[Model]]]:
    """(model, field name, nullable, target) for every foreign key of another model that points
    at a session or a message."""
    found: list[tuple[type[Model], str, bool, type[Model]]] = []
    for model in apps.get_models():
        if model in (Session, Message):
            continue
        for f in model._meta.concrete_fields:
            if (f.many_to_one or f.one_to_one) and f.related_model in (Session, Message):
                target = cast("type[Model]", f.related_model)  # one of the two, not "self"
                found.append((model, f.name, f.null, target))
    # Each batch commits on its own: a row that points at another dependent's row (a hook
    # delivery at its compression event) must go before it, or that commit breaks the link.
    models = {model for model, *_ in found}
    pointed_at = {
        f.related_model
        for model in models
        for f in model._meta.concrete_fields
        if f.many_to_one and f.related_model in models and f.related_model is not model
    }
    found.sort(key=lambda entry: entry[0] in pointed_at)
    return found


def _label(model: type[Model]) -> str:
    return str(model._meta.verbose_name_plural)


def _with_continuations(roots: Iterable[Session]) -> list[tuple[Session, str]]:
    chosen = {s.pk: (s, "chosen") for s in roots}
    frontier = list(chosen)
    while frontier:
        children = list(Session.objects.select_related("channel").filter(parent__in=frontier))
        frontier = []
        for child in children:
            if child.pk not in chosen:
                chosen[child.pk] = (child, f"continuation of {child.parent_id}")
                frontier.append(child.pk)
    return list(chosen.values())


def _plan(pairs: list[tuple[Session, str]], scope: dict[str, str | int]) -> ErasePlan:
    ids = [s.pk for s, _ in pairs]
    by_kind: dict[UUID, Counter[str]] = {pk: Counter() for pk in ids}
    for kind in KINDS:
        rows = (
            Message.objects.filter(session__in=ids)
            .of_kind(kind)
            .values("session")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            by_kind[row["session"]][kind] = row["n"]
    related: dict[str, int] = {}
    for model, name, _, target in _dependents():
        lookup = {f"{name}__in": ids} if target is Session else {f"{name}__session__in": ids}
        if n := model._default_manager.filter(**lookup).count():
            related[_label(model)] = related.get(_label(model), 0) + n
    sessions = [SessionInScope(s, why, {k: by_kind[s.pk][k] for k in KINDS}) for s, why in pairs]
    return ErasePlan(scope, sessions, related)


def plan_sessions(session_ids: Iterable[str | UUID]) -> ErasePlan:
    """The sessions with these ids and their continuations. Raises NotFound if none exists."""
    ids = []
    for value in session_ids:
        try:
            ids.append(UUID(str(value)))
        except ValueError:
            raise NotFound(f"{str(value)[:60]!r} is not a session id (a UUID).") from None
    sessions = list(Session.objects.select_related("channel").filter(pk__in=ids))
    if not sessions:
        raise NotFound(
            f"No session {', '.join(str(i) for i in ids) or '(none given)'}: nothing to erase."
        )
    return _plan(_with_continuations(sessions), {"by": "session", "sessions": len(ids)})


def plan_external_id(channel_name: str, external_id: str) -> ErasePlan:
    """The session a gateway knows by this external id, with the whole chain it belongs to."""
    channel = Channel.objects.filter(name=channel_name).first()
    if channel is None:
        raise NotFound(f"No channel named {channel_name!r}: nothing to erase.")
    try:
        session = Session.objects.select_related("channel").get(
            channel=channel, external_id=external_id
        )
    except (Session.DoesNotExist, DjangoValidationError):
        raise NotFound(
            f"No session of channel {channel_name!r} has that external id: nothing to erase."
        ) from None
    root, earlier = session, set()
    while root.parent_id is not None:
        root = Session.objects.select_related("channel").get(pk=root.parent_id)
        earlier.add(root.pk)
    pairs = [
        (
            s,
            "chosen"
            if s.pk == session.pk
            else "earlier link of the chain"
            if s.pk in earlier
            else why,
        )
        for s, why in _with_continuations([root])
    ]
    return _plan(pairs, {"by": "external_id", "channel": channel.name})


def unfinished() -> list[AuditEntry]:
    return list(
        AuditEntry.objects.filter(action=AuditEntry.Action.ERASE, status=AuditEntry.Status.RUNNING)
    )


def erase(
    plan: ErasePlan,
    actor: str,
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
) -> AuditEntry:
    """Delete everything the plan names. Raises StateConflict if an unfinished erasure holds
    one of its sessions (finish that one first: ``--resume``)."""
    for entry in unfinished():
        if set(entry.details.get("sessions", [])) & set(plan.session_ids):
            raise StateConflict(
                f"An erasure started {entry.created_at:%Y-%m-%d %H:%M} by {entry.actor} over "
                "some of these sessions did not finish: run `manage.py erase --resume` first."
            )
    hooks.before_erase()
    channels = sorted({s.session.channel.name for s in plan.sessions})
    with transaction.atomic():
        entry = audit.record(
            actor,
            AuditEntry.Action.ERASE,
            f"{len(plan.sessions)} session(s) of channel {', '.join(channels)}",
            {
                "scope": plan.scope,
                "channels": channels,
                "sessions": plan.session_ids,
                "planned": {"messages": plan.message_counts(), **plan.related},
                "deleted": {"sessions": 0, "messages": dict.fromkeys(KINDS, 0)},
            },
            status=AuditEntry.Status.RUNNING,
        )
        # No gateway opens these by external id any more (its next open starts afresh), and
        # no compression claims them while they go.
        Session.objects.filter(pk__in=plan.session_ids).update(
            external_id=None, compressing_until=timezone.now() + CLAIM
        )
    return _run(entry, batch, progress)


def resume(
    entry: AuditEntry, batch: int = BATCH, progress: Callable[[int], None] | None = None
) -> AuditEntry:
    """Finish an erasure a crash interrupted; each step is idempotent (what is gone is gone)."""
    hooks.before_erase()
    return _run(entry, batch, progress)


def _run(entry: AuditEntry, batch: int, progress: Callable[[int], None] | None) -> AuditEntry:
    ids = list(entry.details["sessions"])
    dependents = _dependents()
    for model, name, _, to in dependents:
        if to is Session:
            while _delete_rows_batch(entry, model, name, ids, batch):
                pass
    for sid in ids:
        while _delete_batch(entry, sid, batch, dependents, progress):
            pass
    with transaction.atomic():
        # The last step holds the sessions' row locks: an append that slipped in since the
        # batches is deleted here, and none can follow (the session row goes in this
        # transaction).
        present = list(Session.objects.select_for_update().filter(pk__in=ids).values_list("pk"))
        for (sid,) in present:
            while _delete_batch(entry, str(sid), batch, dependents, None, atomic=False):
                pass
        deleted = _delete_related(entry, ids, dependents, Session)
        order = _leaves_first(ids)
        gone = 0
        for sid in order:
            gone += Session.objects.filter(pk=sid)._raw_delete(connection.alias)
        details = _locked(entry)
        details["deleted"]["sessions"] += gone
        _add(details, deleted)
        _add(details, hooks.erase_rows(ids))
        AuditEntry.objects.filter(pk=entry.pk).update(
            details=details, status=AuditEntry.Status.DONE, finished_at=timezone.now()
        )
    hooks.after_erase()
    entry.refresh_from_db()
    return entry


def _locked(entry: AuditEntry) -> dict:
    return AuditEntry.objects.select_for_update().get(pk=entry.pk).details


def _leaves_first(ids: list[str]) -> list[str]:
    parent = dict(Session.objects.filter(pk__in=ids).values_list("pk", "parent_id"))
    depth = {}
    for pk in parent:
        d, p = 0, parent[pk]
        while p in parent and d < len(parent):
            d, p = d + 1, parent[p]
        depth[pk] = d
    return [str(pk) for pk in sorted(parent, key=lambda pk: -depth[pk])]


def _delete_related(entry, ids, dependents, target, message_ids=None) -> dict[str, int]:
    """Rows of other models pointing at these sessions (or messages): deleted, or their link
    emptied where it may be empty and points at a message."""
    counts: dict[str, int] = {}
    for model, name, nullable, to in dependents:
        if to is not target:
            continue
        rows = model._default_manager.filter(
            **({f"{name}__in": ids} if to is Session else {f"{name}__in": message_ids})
        )
        if to is Message and nullable:
            rows.update(**{name: None})
            continue
        n = rows._raw_delete(connection.alias)
        if n:
            counts[_label(model)] = counts.get(_label(model), 0) + n
    return counts


def _add(details: dict, counts: dict[str, int]) -> None:
    for name, n in counts.items():
        details["deleted"][name] = details["deleted"].get(name, 0) + n


def _delete_rows_batch(entry, model, name, ids, batch) -> int:
    """Up to ``batch`` rows of another model hanging off these sessions (a long trail of
    compression events), in one transaction."""
    with transaction.atomic():
        pks = list(
            model._default_manager.filter(**{f"{name}__in": ids}).values_list("pk", flat=True)[
                :batch
            ]
        )
        if not pks:
            return 0
        n = model._default_manager.filter(pk__in=pks)._raw_delete(connection.alias)
        details = _locked(entry)
        _add(details, {_label(model): n})
        AuditEntry.objects.filter(pk=entry.pk).update(details=details)
    time.sleep(PAUSE_SECONDS)
    return n


def _delete_batch(entry, sid, batch, dependents, progress, atomic: bool = True) -> int:
    """Delete up to ``batch`` messages of one session in one transaction (or in the caller's);
    returns how many."""
    with transaction.atomic() if atomic else nullcontext():
        rows = list(
            Message.objects.filter(session_id=sid).values_list(
                "id", "active", "compressed", "is_summary", "is_notice"
            )[:batch]
        )
        if not rows:
            return 0
        message_ids = [r[0] for r in rows]
        # Links into this batch from rows that stay a while longer (a later batch, another
        # link of the chain) are emptied first: those rows are going too.
        Message.objects.filter(summarized_by__in=message_ids).update(summarized_by=None)
        Message.objects.filter(continues__in=message_ids).update(continues=None)
        related = _delete_related(entry, None, dependents, Message, message_ids)
        Message.objects.filter(pk__in=message_ids)._raw_delete(connection.alias)
        kinds = Counter(Message.kind_of(*flags) for _, *flags in rows)
        details = _locked(entry)
        for kind, n in kinds.items():
            # An erasure begun before a kind existed (notices) may be resumed after it did.
            counts = details["deleted"]["messages"]
            counts[kind] = counts.get(kind, 0) + n
        _add(details, related)
        AuditEntry.objects.filter(pk=entry.pk).update(details=details)
    if atomic:
        time.sleep(PAUSE_SECONDS)
    if progress is not None:
        progress(len(rows))
    return len(rows)
