"""The operators' audit log: one row per action on the console, the admin or a management
command that changes state or removes data. Ids and counts only, never message content."""

from __future__ import annotations

import getpass
import os
from typing import Any

from django.http import HttpRequest

from sessions_app.models import AuditEntry


def admin_actor(request: HttpRequest) -> str:
    """Who, for a console or admin request: the signed-in operator."""
    user = getattr(request, "user", None)
    name = user.get_username() if user is not None and user.is_authenticated else "anonymous"
    return f"admin:{name}"


def os_actor() -> str:
    """Who, for a management command: the operating-system user running it (``SUDO_USER``
    too when run through sudo, so ``root`` does not hide the person)."""
    try:
        user = getpass.getuser()
    except Exception:  # no name for this uid (a container): the number still says who
        user = f"uid {os.getuid()}"
    sudo = os.environ.get("SUDO_USER")
    return f"os:{user}" + (f" (sudo from {sudo})" if sudo and sudo != user else "")


def record(
    actor: str,
    action: str,
    target: str = "",
    details: dict[str, Any] | None = None,
    status: str = AuditEntry.Status.DONE,
) -> AuditEntry:
    return AuditEntry.objects.create(
        actor=actor[:200],
        action=action,
        target=target[:300],
        details=details or {},
        status=status,
    )
