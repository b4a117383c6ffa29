"""Compaction hooks (``compression.hooks``): a signed JSON POST to each ``pre_compact`` URL before
the summariser is called, and to each ``post_compact`` URL after a summary lands.

The pre-compact call is synchronous and gates the compression: with
``compression.checkpoint_required`` a hook that fails or times out stops an automatic compression
before anything is written, and asks a manual one to be confirmed. Post-compact deliveries run in
the worker once the summary is committed, retried with backoff; they never undo a compression.
Every attempt is a :class:`~compression.models.HookDelivery` row."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import logging
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from compression.engine import egress
from compression.engine.selection import Selection
from compression.events import record_event
from compression.models import CompressionEvent, HookDelivery
from core.config import get_config
from core.logs import task_kwargs
from core.redaction import Tally
from sessions_app.models import Session
from sessions_app.services import guard_state

logger = logging.getLogger(__name__)
Kind = HookDelivery.Kind
ANSWER_BYTES = 64 * 1024  # a hook's answer is read up to this much; a longer one is a failure
ERROR_CHARS = HookDelivery._meta.get_field("error").max_length


@dataclass
class Gate:
    """What the pre-compact hooks said about one pass: ``failure`` is empty when all answered
    (or none is configured); ``refusal`` says why the pass must not go on, if it must not."""

    failure: str = ""
    refusal: str = ""
    ask: bool = False  # a manual compression: the operator may confirm and go on without it
    delivered: list[int] = field(default_factory=list)


def pre_compact(
    session: Session, selection: Selection, trigger: str, pass_no: int, *, confirmed: bool
) -> Gate:
    """Tell every pre-compact hook what is about to be summarised, and say whether to go on."""
    config = get_config().compression
    urls = config.hooks.pre_compact
    gate = Gate()
    if not urls:
        return gate
    payload = _base(Kind.PRE_COMPACT, session, trigger) | {
        "pass": pass_no,
        "checkpoint_required": config.checkpoint_required,
        "span": {
            "first_position": selection.middle[0].position,
            "last_position": selection.middle[-1].position,
            "messages": len(selection.middle),
            "tokens": selection.middle_tokens,
        },
    }
    if config.hooks.include_rows:
        # Masked as the summariser's copy is (compression.redaction): a hook is egress too.
        payload["rows"] = [
            {"position": m.position, "message": egress.masked_value(m.as_openai())}
            for m in selection.middle
        ]
    # Whether a failure stops the pass; if it does, it ends the round too: the hooks after it
    # would hear of a compression that is not going to happen.
    automatic = trigger not in CompressionEvent.MANUAL
    stops = config.checkpoint_required and (automatic or not confirmed)
    for url in urls:
        delivery = _deliver(Kind.PRE_COMPACT, url, payload, session, trigger, None, uuid.uuid4())
        gate.delivered.append(delivery.pk)
        if not delivery.ok and not gate.failure:
            gate.failure = f"pre-compact hook {_host(url)}: {delivery.error}"
            if stops:
                break
    if gate.failure and stops:
        if automatic:
            gate.refusal = f"{gate.failure}; checkpoint_required is set, so nothing changed"
        else:
            gate.ask = True
            gate.refusal = (
                f"{gate.failure}; checkpoint_required is set, so nothing changed: confirm to "
                "compress without the checkpoint"
            )
    return gate


def refuse(
    session: Session, gate: Gate, trigger: str, threshold: int | None, started: float, pass_no: int
) -> CompressionEvent:
    """Record a pass the checkpoint stopped. Its rows and counters stay exactly as they were; an
    automatic trigger waits out ``failure_cooldown_seconds`` (no failure streak: a hook that is
    down must never lead to the exhaustion reset)."""
    config = get_config().compression
    event = record_event(
        session,
        trigger,
        CompressionEvent.Outcome.FAILED,
        gate.refusal,
        started=started,
        threshold_tokens=threshold,
        error=gate.failure,
        attempt=pass_no,
    )
    HookDelivery.objects.filter(pk__in=gate.delivered).update(event=event)
    if not gate.ask:
        guard_state.cool_down(
            session, timezone.now() + timedelta(seconds=config.failure_cooldown_seconds)
        )
    return event


def settle(gate: Gate, event: CompressionEvent) -> None:
    """Link a pass's pre-compact deliveries to its event; a failure it went on despite is added
    to the event's error."""
    if not gate.delivered:
        return
    HookDelivery.objects.filter(pk__in=gate.delivered).update(event=event)
    if gate.failure:
        error = "; ".join(filter(None, [event.error, f"{gate.failure} (went on without it)"]))
        CompressionEvent.objects.filter(pk=event.pk).update(error=error)
        event.error = error


def post_compact_later(session: Session, event: CompressionEvent) -> None:
    """Queue the post-compact deliveries of ``event`` once its summary is committed."""
    if not get_config().compression.hooks.post_compact:
        return
    session_id, event_id = str(session.pk), event.pk
    request = task_kwargs()  # the request that caused the compression, for the task's logs

    def queue() -> None:
        from django_q.tasks import async_task

        try:
            async_task(
                "compression.tasks.post_compact_task",
                session_id,
                event_id,
                task_name=f"post_compact {session_id}",
                group="hooks",
                **request,
            )
        except Exception as exc:  # the broker refused: the summary stands, the miss is on record
            logger.warning("post-compact hooks of event %s not queued: %s", event_id, exc)

    transaction.on_commit(queue, robust=True)


def deliver_post_compact(
    event_id: int, url: str | None = None, attempt: int = 1, delivery_id: str | None = None
) -> list[HookDelivery]:
    """Deliver ``event``'s summary and provenance to every post-compact URL (or, for a retry,
    to ``url`` again). A failed attempt with retries left is scheduled again after its backoff
    (``retry_backoff_seconds``, doubled each time) as a one-off schedule, so no worker sleeps
    through it: a hook that stays down costs one delivery per attempt, not a blocked worker."""
    hooks = get_config().compression.hooks
    event = (
        CompressionEvent.objects.select_related("session__channel", "summary_message")
        .filter(pk=event_id)
        .first()
    )
    if event is None or event.summary_message is None:
        return []  # erased since, or nothing was written
    urls = hooks.post_compact if url is None else [u for u in hooks.post_compact if u == url]
    if not urls:
        return []  # no longer configured: the retry has nowhere to go
    summary = event.summary_message
    # Stamped with when the compression landed, so every retry sends the very same body.
    payload = _base(Kind.POST_COMPACT, event.session, event.trigger) | {
        "timestamp": event.created_at.isoformat(),
        "summary": {
            "message_id": summary.pk,
            "position": summary.position,
            "role": summary.role,
            "content": egress.masked_text(summary.content, Tally()),
            "covers_from": summary.covers_from_position,
            "covers_to": summary.covers_to_position,
            "tokens": summary.token_count,
        },
        "provenance": {
            "event_id": event.pk,
            "outcome": event.outcome,
            "trigger": event.trigger,
            "model": event.summary_model,
            "fallback": summary.is_fallback_summary,
            "pass": event.attempt,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
            "messages_before": event.messages_before,
            "messages_after": event.messages_after,
            "rows_archived": event.rows_archived,
            "compressed_at": event.created_at.isoformat(),
        },
    }
    done = []
    for target in urls:
        # One delivery id per URL, the same for its retries.
        delivery_uuid = uuid.UUID(delivery_id) if delivery_id else uuid.uuid4()
        delivery = _deliver(
            Kind.POST_COMPACT,
            target,
            payload,
            event.session,
            event.trigger,
            event,
            delivery_uuid,
            attempt=attempt,
        )
        done.append(delivery)
        if not delivery.ok and attempt <= hooks.post_compact_retries:
            _retry_later(event, target, attempt + 1, delivery_uuid, hooks.retry_backoff_seconds)
    return done


def _retry_later(
    event: CompressionEvent, url: str, attempt: int, delivery_id: uuid.UUID, backoff: float
) -> None:
    """Attempt ``attempt`` of a post-compact delivery, as a one-off schedule the worker's
    scheduler starts once ``backoff * 2 ** (attempt - 2)`` seconds have passed (the scheduler looks
    every few seconds, so a retry can come that much later). Named ``… <session id>`` so an
    erasure takes it with the session."""
    from django_q.models import Schedule
    from django_q.tasks import schedule

    session_id = str(event.session_id)
    try:
        schedule(
            "compression.tasks.post_compact_task",
            session_id,
            event.pk,
            url,
            attempt,
            str(delivery_id),
            name=f"post_compact retry {delivery_id} #{attempt} {session_id}",
            schedule_type=Schedule.ONCE,
            next_run=timezone.now() + timedelta(seconds=backoff * 2 ** (attempt - 2)),
            **task_kwargs(),
        )
    except Exception as exc:  # the summary stands; the missed retry is on record
        logger.warning("post-compact retry of event %s not scheduled: %s", event.pk, exc)


def _base(kind: str, session: Session, trigger: str) -> dict[str, Any]:
    return {
        "event": kind,
        "timestamp": timezone.now().isoformat(),
        "session": {
            "id": str(session.pk),
            "external_id": session.external_id,
            "channel": session.channel.name,
            "model": session.model,
        },
        "trigger": trigger,
        "automatic": trigger not in CompressionEvent.MANUAL,
    }


def sign(secret: str, body: bytes) -> str:
    """The X-Hermes-Signature value: ``sha256=`` and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _deliver(
    kind: str,
    url: str,
    payload: dict[str, Any],
    session: Session,
    trigger: str,
    event: CompressionEvent | None,
    delivery_id: uuid.UUID,
    *,
    attempt: int = 1,
) -> HookDelivery:
    hooks = get_config().compression.hooks
    body = json.dumps({**payload, "delivery_id": str(delivery_id)}).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "hermes-memory-hooks",
        "X-Hermes-Event": kind,
        "X-Hermes-Delivery": str(delivery_id),
    }
    if hooks.secret:
        headers["X-Hermes-Signature"] = sign(hooks.secret, body)
    started = time.monotonic()
    status, error = post(url, body, headers, hooks.timeout_seconds)
    return HookDelivery.objects.create(
        kind=kind,
        url=_where(url),
        session=session,
        event=event,
        trigger=trigger,
        delivery_id=delivery_id,
        attempt=attempt,
        ok=not error,
        status_code=status,
        error=error[:ERROR_CHARS],
        duration_ms=int((time.monotonic() - started) * 1000),
        signed=bool(hooks.secret),
    )


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """POST ``body``; (status, "") when the hook took it (2xx and an empty or JSON answer), else
    (status or None, one line saying what went wrong). The whole exchange -- name lookup,
    connect, send, an answer however slowly it trickles in -- is bounded by ``timeout``: it runs
    in a thread of its own, and a hook still talking then has its socket closed under it."""
    state: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: state.setdefault("outcome", _exchange(url, body, headers, timeout, state)),
        name="hermes-hook",
        daemon=True,
    )
    worker.start()
    worker.join(timeout)
    if "outcome" in state:
        return state["outcome"]
    connection = state.get("connection")
    if connection is not None and connection.sock is not None:
        with contextlib.suppress(OSError):
            connection.sock.shutdown(socket.SHUT_RDWR)  # the thread's read returns at once
    return state.get("status"), f"no answer within {timeout:g} s"


def _exchange(
    url: str, body: bytes, headers: dict[str, str], timeout: float, state: dict[str, Any]
) -> tuple[int | None, str]:
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    status = None
    connection = None
    try:
        if parts.hostname is None:  # the configuration takes none without a host
            raise http.client.InvalidURL(f"{url!r} has no host")
        connection = state["connection"] = kind(parts.hostname, parts.port, timeout=timeout)
        connection.request("POST", path, body=body, headers=headers)
        _left(connection, deadline)
        response = connection.getresponse()
        status = state["status"] = response.status
        answer = b""
        while len(answer) <= ANSWER_BYTES:
            _left(connection, deadline)
            chunk = response.read1(8192)
            if not chunk:
                break
            answer += chunk
        if not 200 <= status < 300:
            return status, f"answered HTTP {status}"
        if len(answer) > ANSWER_BYTES:
            return status, f"answered with more than {ANSWER_BYTES // 1024} KiB"
        if answer.strip():
            try:
                json.loads(answer)
            except ValueError:
                return status, f"answered HTTP {status} with a body that is not JSON"
        return status, ""
    except TimeoutError:
        return status, f"no answer within {timeout:g} s"
    except ConnectionRefusedError:
        return status, "connection refused"
    except socket.gaierror:
        return status, f"host {parts.hostname!r} not found"
    except ssl.SSLError as exc:
        return status, f"TLS error ({exc.reason or type(exc).__name__})"
    except (http.client.InvalidURL, ValueError, UnicodeError):
        return status, "the URL cannot be connected to (its host or port is not valid)"
    except http.client.HTTPException as exc:
        return status, f"answered something that is not HTTP ({type(exc).__name__})"
    except OSError as exc:
        return status, f"connection failed ({exc.strerror or type(exc).__name__})"
    finally:
        if connection is not None:
            connection.close()


def _left(connection: http.client.HTTPConnection, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    if connection.sock is not None:
        connection.sock.settimeout(left)


def _host(url: str) -> str:
    """A hook as an event (which a gateway reads) names it: scheme, host and port only -- many
    hook URLs carry their token in the path; the admin's deliveries show the path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _where(url: str) -> str:
    """A URL as a delivery record (which only operators see) shows it: never its user and
    password."""
    parts = urlsplit(url)
    shown = f"{_host(url)}{parts.path}"
    return f"{shown}?{parts.query}" if parts.query else shown
