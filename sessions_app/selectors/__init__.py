"""Reads of the store that the other parts make (the writes are ``sessions_app.services``):
the live context as it is sent (``context``), sessions (``sessions``) and message rows
(``messages``). The engine, the console and the agent read sessions and messages only through
these, so a read's shape (its joins, its deferred columns, its lock) is decided in one place."""

from sessions_app.selectors.context import external_context, live_context, live_rows, sent

__all__ = ["external_context", "live_context", "live_rows", "sent"]
