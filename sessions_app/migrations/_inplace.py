"""Adding a column to the messages table without rebuilding it (for this app's migrations).

Django adds a NOT NULL column on SQLite by rebuilding the table: every row copied (minutes at a
million) and the table's search triggers dropped with the old one, after which new messages are
not found. ``ALTER TABLE … ADD COLUMN … DEFAULT`` with a constant does neither, on SQLite and on
PostgreSQL (11+: a catalogue change). Use it with ``SeparateDatabaseAndState``, the AddField in
the state operations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TABLE = "sessions_app_message"


def add_flag(column: str) -> tuple[Callable[..., None], Callable[..., None]]:
    """(forward, backward) for ``RunPython``: a boolean column, false for every row."""

    def forward(apps: Any, schema_editor: Any) -> None:
        sqlite = schema_editor.connection.vendor == "sqlite"
        kind, false = ("bool", "0") if sqlite else ("boolean", "false")
        schema_editor.execute(
            f'ALTER TABLE "{TABLE}" ADD COLUMN "{column}" {kind} NOT NULL DEFAULT {false}'
        )

    def backward(apps: Any, schema_editor: Any) -> None:
        schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP COLUMN "{column}"')

    return forward, backward
