"""The configuration blocks of this service's own features (not part of Hermes Agent's file),
kept apart from the loader and the Hermes-compatible blocks in ``core.config``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator


def token_shape(value: str) -> str:
    """A shared secret or bearer token from the config: empty (none) or one worth having."""
    if value and (len(value) < 16 or not value.isprintable() or " " in value):
        raise ValueError(
            "expected at least 16 printable characters without spaces, such as the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    return value


class Block(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class SearchConfig(Block):
    """Recall (this service's own block)."""

    rank_window: Annotated[int, Field(ge=100, le=1_000_000)] = 1_000
    # A query that matches more than rank_window is ranked over every match from its best
    # rows, kept by the worker: this many per query and scope (pages within them are exact)...
    rank_keep: Annotated[int, Field(ge=20, le=10_000)] = 200
    # ...for at most this many queries (the least recently refreshed go first).
    rank_queries: Annotated[int, Field(ge=0, le=1_000_000)] = 10_000
    scan_rows: Annotated[int, Field(ge=1_000, le=100_000_000)] = 200_000
    # The scan reads scan_rows at a time, newest first, and goes on to older ones for this long;
    # an answer it cut short says how far it reached and how to continue.
    scan_seconds: Annotated[float, Field(ge=0, le=60)] = 0.5
    # SQLite: the newest this-many messages are also in small "recent" indexes that rank a
    # common term's newest matches (FTS5's bm25() counts a term's matches across its table).
    recent_rows: Annotated[int, Field(ge=0, le=100_000_000)] = 200_000

    @field_validator("recent_rows")
    @classmethod
    def _enough_for_statistics(cls, value: int) -> int:
        if 0 < value < 10_000:
            raise ValueError(
                "expected 0 (no recent indexes) or at least 10000: BM25 ranks with the "
                "statistics of the rows it runs on, and a few thousand give meaningless ones"
            )
        return value


class EventsConfig(Block):
    """The compression-event trail (this service's own block)."""

    # Trigger decisions (skipped, locked) whose last repeat is older than this are trimmed once
    # an hour; compressions, failures, prunes and resets are kept for ever. 0: keep everything.
    retention_days: Annotated[int, Field(ge=0, le=36_500)] = 90


class RecallConfig(Block):
    """The ``session_search`` tool offered to the model in ``/turn`` (this service's own block)."""

    # Offer the tool in every turn the service runs (the gateway API serves it either way).
    tool: bool = True
    # Tool rounds per turn: after this many, the model is asked once more with tools off.
    max_rounds: Annotated[int, Field(ge=1, le=20)] = 4
    # Wall time for the tool rounds of one turn (model calls included); then, as above.
    time_budget_seconds: Annotated[float, Field(gt=0, le=3600)] = 60
    default_limit: Annotated[int, Field(ge=1, le=20)] = 5
    # Characters of each hit's excerpt in a tool result (the model reads every one).
    excerpt_chars: Annotated[int, Field(ge=80, le=4000)] = 400


IdleDays = Annotated[int, Field(ge=0, le=36_500)]


class RetentionConfig(Block):
    """Moving idle sessions out of the live set (this service's own block). Archiving hides a
    session from the default session lists; it keeps every message and stays searchable, and
    an append brings it back. Nothing is ever deleted."""

    # Live sessions with no activity for this many days are archived once a day. 0: never.
    archive_idle_days: IdleDays = 0
    # Per channel, by name: overrides archive_idle_days (0 turns it off for that channel).
    channels: dict[str, IdleDays] = Field(default_factory=dict)

    def days_for(self, channel: str) -> int:
        return self.channels.get(channel, self.archive_idle_days)


class KeysConfig(Block):
    """Channel keys (this service's own block)."""

    # A key rotated from the admin keeps working this long, so the gateway can be given the new
    # one; then it expires (401). 0: the old key stops at once.
    rotation_grace_hours: Annotated[float, Field(ge=0, le=24 * 365)] = 24


class MemoryConfig(Block):
    """Memory blocks: text placed after the system prompt of every live context (this service's
    own block). They count in the live tokens, so a compression makes room around them."""

    # One block's text, in characters (Letta's default block limit; Hermes's MEMORY.md is 2,200).
    block_max_chars: Annotated[int, Field(ge=100, le=100_000)] = 5_000
    # Blocks per channel and per session.
    max_blocks: Annotated[int, Field(ge=1, le=100)] = 20
    # Offer the model memory_write and memory_delete in the turn the service runs: it then
    # keeps its session's blocks itself, each write audited with the message it came from.
    model_tools: bool = False


class RedactionConfig(Block):
    """``compression.redaction``: secret shapes masked in what leaves for a summariser, a
    compaction hook or server-side compaction (core.redaction). The originals are kept as sent."""

    enabled: bool = True
    # Built-in shapes by name (all by default): private_keys, url_passwords, bearer,
    # provider_keys, aws_keys, env_secrets.
    patterns: tuple[str, ...] = (
        "private_keys",
        "url_passwords",
        "bearer",
        "provider_keys",
        "aws_keys",
        "env_secrets",
    )
    # More shapes: a name for the mask and a Python regex; a group named "secret", if any, is
    # what is masked (else the whole match).
    extra_patterns: dict[str, str] = Field(default_factory=dict)

    @field_validator("patterns", mode="before")
    @classmethod
    def _known(cls, value: object) -> object:
        from core.redaction import NAMES

        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            unknown = [v for v in value if v not in NAMES]
            if unknown:
                raise ValueError(
                    f"unknown pattern {unknown[0]!r}; the built-in ones are {', '.join(NAMES)}"
                )
        return value

    @field_validator("extra_patterns")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        import re

        for name, pattern in value.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
                raise ValueError(f"{name!r}: a name is lower-case letters, digits and _")
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{name}: not a regular expression: {exc}") from None
            if compiled.match(""):
                raise ValueError(f"{name}: the pattern matches empty text")
        return value


class ScoringConfig(Block):
    """``compression.scoring``: every written summary is scored against the originals it
    replaces (compression.engine.retention); no model call."""

    # A summary keeping a smaller share of its span's salient items than this is flagged, and
    # the console offers to compress again with another model. 0: never flagged.
    floor: Annotated[float, Field(ge=0, le=1)] = 0.6
    # manage.py probe_summary asks the summariser this many questions by default.
    probe_questions: Annotated[int, Field(ge=1, le=50)] = 6
