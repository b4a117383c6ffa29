"""``POST …/turn`` with ``"stream": true``: the turn's events as server-sent events.

Everything up to the model's first words (hygiene, preflight, the user's message stored) runs
before the answer starts, so a failure there is an ordinary HTTP error. After that the answer is
a stream: ``delta`` events as the model writes, ``tool`` for each session_search call, then one
``done`` with what the non-streamed call would have answered, or ``error``. A client that goes
away closes the turn's generator, which keeps the session consistent (see ``turn_steps``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from django.http import StreamingHttpResponse
from ninja.responses import NinjaJSONEncoder

from agent.turn import TurnResult, turn_steps
from core.errors import report
from sessions_app.models import Session
from sessions_app.services import ServiceError


def _event(name: str, data: Any) -> bytes:
    payload = json.dumps(data, cls=NinjaJSONEncoder, ensure_ascii=False)
    return f"event: {name}\ndata: {payload}\n\n".encode("utf-8", errors="backslashreplace")


def streamed_turn(
    session: Session,
    content: str,
    name: str | None,
    answer: Callable[[TurnResult], dict[str, Any]],
) -> StreamingHttpResponse:
    steps = turn_steps(session, content, name, stream=True)
    first: list[bytes] = []
    try:  # up to the first event, in the request: errors before the stream are plain HTTP
        event = next(steps)
        first.append(_event(event.pop("event"), event))
    except StopIteration as done:  # a turn that had nothing to stream (/compress, say)
        first.append(_event("done", answer(done.value)))
        # steps has ended: events() reads nothing more from it, and closing it does nothing.

    def events() -> Iterator[bytes]:
        yield from first
        try:
            while True:
                event = next(steps)
                yield _event(event.pop("event"), event)
        except StopIteration as done:
            if done.value is not None:
                yield _event("done", answer(done.value))
        except ServiceError as exc:
            yield _event("error", {"detail": exc.message, "status": exc.status_code})
        except Exception as exc:  # the stream has begun: say so in it, never a traceback
            yield _event("error", {"detail": report(exc, "a streamed turn"), "status": 500})
        finally:
            # A client that went away: the turn keeps the session consistent. (The database
            # connection is Django's to close, when the response is: request_finished.)
            steps.close()

    response = StreamingHttpResponse(events(), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each event on as it comes
    return response
