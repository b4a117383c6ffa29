"""Reads of the store that more than one part makes (the writes are ``sessions_app.services``):
the live context as it is sent, which rows it holds, whether it lives elsewhere."""

from sessions_app.selectors.context import external_context, live_context, live_rows, sent

__all__ = ["external_context", "live_context", "live_rows", "sent"]
