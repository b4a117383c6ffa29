"""Every write to the store goes through these functions (the API, admin and CLI call them);
its reads that other parts make are ``sessions_app.selectors``."""

from sessions_app.services.errors import (
    ContentTooLarge,
    InvalidInput,
    NotFound,
    ServiceError,
    StateConflict,
)
from sessions_app.services.messages import AppendResult, append_messages, rollback_messages
from sessions_app.services.sessions import (
    get_session_for_channel,
    open_session,
    recount,
    reset_session,
)

__all__ = [
    "AppendResult",
    "ContentTooLarge",
    "InvalidInput",
    "NotFound",
    "ServiceError",
    "StateConflict",
    "append_messages",
    "get_session_for_channel",
    "open_session",
    "recount",
    "reset_session",
    "rollback_messages",
]
