"""Proactive pruning's write: a tool result's pruned form is kept beside its original (which
stays in ``content``, searchable), and the live context is counted with the pruned form."""

from __future__ import annotations

from sessions_app.models import Message, Session


def save_pruned(session: Session, rows: list[Message], live_tokens: int) -> None:
    """Store the pruned forms and token counts the caller set on ``rows``, and the session's
    live tokens after them. Call inside the transaction holding the session's lock."""
    Message.objects.bulk_update(
        rows, ["pruned_content", "pruned_tool_calls", "token_count", "pruned_at"]
    )
    Session.objects.filter(pk=session.pk).update(live_tokens=live_tokens)
