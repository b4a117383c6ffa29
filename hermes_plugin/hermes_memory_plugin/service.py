"""One HTTP call to the service, with the standard library only (Hermes's environment has no
client we could rely on across versions, and a connection kept in the engine would not survive
Hermes's deep copy). Every call has a timeout; a service that is down, slow or failing is an
:class:`Away` the caller turns into "spool and go on", never an error the turn sees."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from .settings import Settings


class Away(Exception):
    """The service did not answer usefully: refused, timed out, 5xx, or the key was refused
    (401/403: nothing can be delivered until the key is fixed)."""


@dataclass
class Answer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def detail(self) -> str:
        if isinstance(self.body, dict):
            return str(self.body.get("detail") or self.body)[:300]
        return str(self.body)[:300]


def call(
    settings: Settings,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    timeout: float | None = None,
) -> Answer:
    """``method`` ``/api/v1`` + ``path``; raises :class:`Away` when the service is not there."""
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(settings.api + path, data=data, method=method)  # noqa: S310 - the configured service
    request.add_header("Authorization", f"Bearer {settings.key}")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout or settings.timeout) as response:  # noqa: S310
            answer = Answer(response.status, _json(response.read()))
    except urllib.error.HTTPError as error:
        answer = Answer(error.code, _json(error.read()))
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise Away(f"{settings.api} did not answer: {getattr(error, 'reason', error)}") from error
    if answer.status >= 500 or answer.status in (401, 403):
        raise Away(f"{settings.api} answered {answer.status}: {answer.detail()}")
    return answer


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        return raw[:300].decode("utf-8", "replace")
