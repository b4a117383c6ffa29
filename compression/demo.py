"""The demo's history, lived rather than loaded: the long demo conversation is appended turn by
turn at the times it tells of, through the live triggers, so the console opens on a session that
was compressed as it grew -- summaries with their originals, one summary that fell back to the
local digest when the model failed, the cooldown that failure started, and a chart with two
weeks behind it.

The summariser is the loopback model (``compression.testing.fake_model``) on a free port for the
length of the replay; its one failure is scripted. Time is moved with ``time-machine`` inside
this process only, so every row, event, cooldown and claim carries the time it would have had.
Queued tasks run in-process (django-q2's ``sync``), as the worker would have run them then.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import time_machine
from django.test.utils import override_settings
from django.utils import timezone

from compression.testing.fake_model import Digest, Fail, FakeModelServer
from core.config import get_config
from sessions_app.models import Session
from sessions_app.services import append_messages

# The last turns are dated minutes apart, so that the model's scripted failure lands inside the
# cooldown it starts when the demo opens (failure_cooldown_seconds, 600 by default).
RECENT_TURNS = 12
RECENT_SPAN = timedelta(minutes=6)


def turns(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The conversation cut before every user message: each piece is what a gateway appends
    after one exchange, so no tool call is ever split from its result."""
    pieces: list[list[dict[str, Any]]] = []
    for message in messages:
        if message.get("role") == "user" or not pieces:
            pieces.append([])
        pieces[-1].append(message)
    return pieces


def schedule(count: int, days: float, end: datetime) -> list[datetime]:
    """When each of ``count`` turns happened: evenly over ``days`` up to the recent stretch,
    then the last ``RECENT_TURNS`` minutes apart, the newest at ``end``."""
    recent = min(RECENT_TURNS, count)
    early = count - recent
    start = end - timedelta(days=days)
    recent_start = end - RECENT_SPAN
    times = [start + (recent_start - start) * i / max(early, 1) for i in range(early)]
    times += [recent_start + RECENT_SPAN * (i + 1) / recent for i in range(recent)]
    return times


@contextmanager
def _summariser() -> Iterator[FakeModelServer]:
    """The loopback model as the summariser (whatever the config names) for the replay."""
    from django_q.conf import Conf

    with FakeModelServer() as server:
        server.script.default = Digest()
        config = get_config()
        summariser = config.auxiliary.compression.model_copy(
            update={"model": "demo-summariser", "api_key": "demo", "base_url": server.base_url}
        )
        auxiliary = config.auxiliary.model_copy(update={"compression": summariser})
        replay = config.model_copy(update={"auxiliary": auxiliary})
        sync = Conf.SYNC
        Conf.SYNC = True  # a task queued during the replay runs then, as a worker would
        quiet = logging.getLogger("django-q")
        level = quiet.level
        quiet.setLevel(logging.WARNING)  # not "processing ..." for every task run in-process
        try:
            with override_settings(HERMES=replay):
                yield server
        finally:
            Conf.SYNC = sync
            quiet.setLevel(level)


def play(session: Session, messages: list[dict[str, Any]], *, days: float) -> None:
    """Append ``messages`` to ``session`` a turn at a time, at the times they tell of, with the
    automatic triggers on."""
    pieces = turns(messages)
    times = schedule(len(pieces), days, timezone.now())
    fail_after = max(len(pieces) - RECENT_TURNS, 0)  # the next summary call after it fails
    if times:  # the session opened (its system prompt) as the first turn began
        session.messages.update(created_at=times[0])
        Session.objects.filter(pk=session.pk).update(created_at=times[0])
    with _summariser() as server:
        for n, (piece, moment) in enumerate(zip(pieces, times, strict=True)):
            if n == fail_after:
                server.then(Fail(503, "The demo's model is overloaded; try again later."))
            with time_machine.travel(moment, tick=True):
                append_messages(session, piece)
                session.refresh_from_db()
