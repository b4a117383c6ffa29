"""The store: channels and their keys, sessions, and every message ever said (SPEC S1-S5).

Rows are never deleted by the service. A message's two flags give its kind:

==============  ======  ==========  ===============  ============
kind            active  compressed  in live context  in search
==============  ======  ==========  ===============  ============
live / summary  true    false       yes              yes
archived        false   true        no               yes
rolled back     false   false       no               no
==============  ======  ==========  ===============  ============

Per-session counters are maintained by the services in the same transaction as the rows they count,
so reading them is one primary-key lookup however long the session grows.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Q

if TYPE_CHECKING:
    from sessions_app.guards import Guards


class Channel(models.Model):
    """A gateway (Telegram bot, Discord bot, TUI, ACP editor...). Its keys see only its sessions."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Scope(models.TextChoices):
    """What a key may do. Every API route needs exactly one (sessions_app.api.auth)."""

    READ = "read", "read: sessions, messages, context, search"
    WRITE = "write", "write: open, append, rollback, turn"
    OPERATE = "operate", "operate: compress, reset"


ALL_SCOPES = " ".join(Scope.values)


class ApiKey(models.Model):
    """A bearer key: only a lookup prefix and a SHA-256 of the whole key are stored. It may be
    limited to some scopes and may expire (a rotated key expires after a grace period)."""

    channel = models.ForeignKey(Channel, on_delete=models.PROTECT, related_name="keys")
    label = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Space-separated Scope values; keys from before scopes existed got all three.
    scopes = models.CharField(max_length=40, default=ALL_SCOPES)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="After this the key answers 401 (empty: never)."
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.channel.name}: hm_{self.prefix}_…"

    @property
    def scope_set(self) -> frozenset[str]:
        return frozenset(self.scopes.split())

    def expired(self, now=None) -> bool:
        from django.utils import timezone

        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.expired()


class Session(models.Model):
    """One conversation of one channel, with O(1) counters and persisted guard state."""

    class WindowSource(models.TextChoices):
        DECLARED = "declared", "declared by the gateway"
        CATALOG = "catalog", "known model"
        DEFAULT = "default", "configured default"
        LOWERED = "lowered", "lowered after a long-context error"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    channel = models.ForeignKey(Channel, on_delete=models.PROTECT, related_name="sessions")
    external_id = models.CharField(max_length=200, null=True, blank=True)
    title = models.CharField(max_length=300, blank=True)
    model = models.CharField(max_length=200, blank=True)
    context_window = models.PositiveIntegerField()
    context_window_source = models.CharField(
        max_length=10, choices=WindowSource.choices, default=WindowSource.DEFAULT
    )

    # Counters (maintained on write; never computed by scanning messages).
    live_messages = models.PositiveIntegerField(default=0)
    live_tokens = models.PositiveBigIntegerField(default=0)
    total_messages = models.PositiveIntegerField(default=0)
    compressions = models.PositiveIntegerField(default=0)
    next_position = models.PositiveIntegerField(default=0)
    # A mirroring client's own count of the messages it has sent with a ``sequence`` (the
    # append's exactly-once check): the next batch's first message is expected at this index.
    next_sequence = models.PositiveBigIntegerField(default=0, db_default=0)
    # The tool the client's model recalls originals with: each summary's note and each progress
    # notice name it (a Hermes plugin's model has its own session_search, searching elsewhere).
    recall_tool = models.CharField(
        max_length=64, default="session_search", db_default="session_search"
    )

    # What the model last reported; preferred over local estimates (SPEC 10).
    last_prompt_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    last_completion_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    last_usage_at = models.DateTimeField(null=True, blank=True)

    # A session continued from another by a compression with ``in_place: false``.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="continuations"
    )
    # One compression at a time: a claim that expires, so a crashed worker cannot hold it forever.
    compressing_until = models.DateTimeField(null=True, blank=True)
    # At most one automatic compression per session waits in the queue: set when one is
    # queued, cleared when it starts. Read and written by the compression app.
    auto_queued_at = models.DateTimeField(null=True, blank=True)
    # Where the model runs, when not through our own chat call: a Codex app-server thread id,
    # an OpenAI server-side compaction item... Read and written by the compression app.
    provider_state = models.JSONField(null=True, blank=True)

    # Guard state (F1-F3), persisted so it survives restarts.
    cooldown_until = models.DateTimeField(null=True, blank=True)
    thrash_lock_until = models.DateTimeField(null=True, blank=True)
    failure_streak = models.PositiveIntegerField(default=0)
    ineffective_streak = models.PositiveIntegerField(default=0)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_activity_at = models.DateTimeField(auto_now_add=True)
    last_reset_at = models.DateTimeField(null=True, blank=True)
    # Set by retention (retention.archive_idle_days) when the session was idle long enough:
    # hidden from the default session lists, every message kept and searchable. The next
    # append clears it.
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-last_activity_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "external_id"],
                condition=Q(external_id__isnull=False),
                name="unique_external_id_per_channel",
            ),
        ]
        indexes = [models.Index(fields=["channel", "-last_activity_at"])]

    def __str__(self) -> str:
        """What a person knows it by: its title, else the gateway's id for it, else its own."""
        return self.title or self.external_id or str(self.id)

    def guards(self, now: datetime | None = None) -> Guards:
        """The guards holding it at ``now``: a time that has passed holds nothing."""
        from sessions_app.guards import guards_of

        return guards_of(self, now)


class MessageQuerySet(models.QuerySet["Message"]):
    def live(self) -> MessageQuerySet:
        return self.filter(active=True)

    def of_kind(self, kind: str) -> MessageQuerySet:
        return self.filter(**Message.KIND_FILTERS[kind])


class Message(models.Model):
    """One row of a conversation. Its text is kept verbatim forever."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    class Kind(models.TextChoices):
        LIVE = "live"
        SUMMARY = "summary"
        ARCHIVED = "archived"
        ROLLED_BACK = "rolled_back", "rolled back"
        NOTICE = "notice"

    class ArchiveReason(models.TextChoices):
        COMPRESSION = "compression"
        RESET = "reset"

    KIND_FILTERS: dict[str, dict[str, bool]] = {  # looked up by a kind's value
        Kind.LIVE: {"active": True, "is_summary": False},
        Kind.SUMMARY: {"active": True, "is_summary": True},
        Kind.ARCHIVED: {"active": False, "compressed": True},
        Kind.ROLLED_BACK: {"active": False, "compressed": False, "is_notice": False},
        Kind.NOTICE: {"is_notice": True},
    }

    session = models.ForeignKey(Session, on_delete=models.PROTECT, related_name="messages")
    # The session's channel, copied onto each row (a session never changes channel): the filter
    # every gateway search carries is then read from the row the search joins anyway, instead
    # of a list of the channel's sessions built on every query (growing with their number).
    # Nullable only because adding a NOT NULL column to SQLite rebuilds the table; every writer
    # sets it, and the test suite checks that none is left empty.
    channel = models.ForeignKey(
        Channel,
        on_delete=models.PROTECT,
        null=True,
        editable=False,
        related_name="+",
        db_index=False,
    )
    position = models.PositiveIntegerField(help_text="Order in the whole conversation, from 0.")
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(null=True, blank=True, help_text="Plain text of the message.")
    content_parts = models.JSONField(
        null=True, blank=True, help_text="Original multi-part content, when not a plain string."
    )
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, null=True, blank=True)
    name = models.CharField(max_length=200, null=True, blank=True)
    extra = models.JSONField(
        null=True, blank=True, help_text="Other OpenAI message fields, replayed verbatim."
    )
    provider_item = models.JSONField(
        null=True,
        blank=True,
        help_text="An opaque item a provider returned, sent back only to that provider "
        "(an OpenAI compaction item); never part of the chat-completions message.",
    )
    origin = models.JSONField(
        null=True,
        blank=True,
        help_text="Where an imported row came from (the system, its ids) and the fields that "
        "system kept that are not part of an OpenAI message (a tool's name, reasoning); never "
        "sent to a model.",
    )
    token_count = models.PositiveIntegerField(
        default=0, help_text="Tokens this row costs in the live context (after any pruning)."
    )
    # Proactive pruning (T7d) shortens what the live context sends for a tool result or a tool
    # call's arguments; content and tool_calls keep the original, which stays in search.
    pruned_content = models.TextField(null=True, blank=True)
    pruned_tool_calls = models.JSONField(null=True, blank=True)
    pruned_at = models.DateTimeField(null=True, blank=True)

    active = models.BooleanField(default=True)
    compressed = models.BooleanField(default=False)
    is_summary = models.BooleanField(default=False)
    # A pinned row is never summarised, micro-compacted or pruned away: it stays in the live
    # context, in its place, across every compression (with its whole tool-call group).
    pinned = models.BooleanField(default=False)
    is_fallback_summary = models.BooleanField(default=False)
    # A notice for the channel's user (compression.progress_notices): in the session's history,
    # never live (so never sent to a model nor counted in live tokens) and never indexed.
    is_notice = models.BooleanField(default=False)
    # S5: an archived original points at the summary that replaced it; a summary records its range.
    summarized_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="replaced",
        limit_choices_to={"is_summary": True},
    )
    covers_from_position = models.PositiveIntegerField(null=True, blank=True)
    covers_to_position = models.PositiveIntegerField(null=True, blank=True)
    # in_place: false -- a row of a continuation session carries on this row of its parent
    # (a summary's covered positions are then the parent's). Search shows such a pair once.
    continues = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="continued_by",
        db_index=False,  # a partial index below: almost every row has none
    )
    archive_reason = models.CharField(
        max_length=12, choices=ArchiveReason.choices, null=True, blank=True
    )

    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    rolled_back_at = models.DateTimeField(null=True, blank=True)
    rollback_reason = models.CharField(max_length=20, blank=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        ordering = ["session", "position", "id"]
        constraints = [
            # Originals own their position. A summary takes the position of the first message it
            # replaced, so head + summary + tail stays in position order; an older summary it
            # absorbed may share that position.
            models.UniqueConstraint(
                fields=["session", "position"],
                condition=Q(is_summary=False),
                name="unique_position",
            ),
            models.CheckConstraint(
                condition=~Q(active=True, compressed=True), name="live_rows_are_not_compressed"
            ),
            models.CheckConstraint(
                condition=~Q(role="tool", tool_call_id__isnull=True),
                name="tool_rows_have_tool_call_id",
            ),
            models.CheckConstraint(
                condition=~Q(is_notice=True, active=True) & ~Q(is_notice=True, compressed=True),
                name="notices_are_never_live_nor_indexed",
            ),
        ]
        indexes = [
            models.Index(fields=["session", "active", "position"], name="msg_live_idx"),
            # The live context, in the order it is sent, from an index that holds only live rows:
            # reading it costs the same whatever the session has archived (Django writes
            # active=True as a bare "active", which the composite index above cannot seek on).
            models.Index(
                fields=["session", "position", "-is_summary", "id"],
                condition=Q(active=True),
                name="msg_live_rows",
            ),
            models.Index(fields=["summarized_by"], name="msg_summary_idx"),
            # The timeline reads a session a page at a time, by position: the rows not under a
            # summary (what an operator scrolls), and, on demand, a summary's originals. Each
            # from an index that holds only those rows, so a page costs the same in a session
            # of a hundred rows and in one of a million, however much is archived.
            models.Index(
                fields=["session", "position", "id"],
                condition=Q(summarized_by__isnull=True),
                name="msg_main_flow",
            ),
            models.Index(
                fields=["summarized_by", "position", "id"],
                condition=Q(summarized_by__isnull=False),
                name="msg_originals",
            ),
            models.Index(
                fields=["continues"],
                name="msg_continues_idx",
                condition=Q(continues__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.position} {self.role} ({self.kind})"

    @property
    def kind(self) -> str:
        return self.kind_of(self.active, self.compressed, self.is_summary, self.is_notice)

    @classmethod
    def kind_of(cls, active: bool, compressed: bool, is_summary: bool, is_notice: bool) -> str:
        if active:
            return cls.Kind.SUMMARY if is_summary else cls.Kind.LIVE
        if is_notice:
            return cls.Kind.NOTICE
        return cls.Kind.ARCHIVED if compressed else cls.Kind.ROLLED_BACK

    def as_openai(self) -> dict:
        """The message as the chat-completions API expects it, as the live context sends it
        (pruned, if it was; ``content`` and ``tool_calls`` keep what was said)."""
        return openai_message(self)


def openai_message(row: Any) -> dict:
    """A row as the chat-completions API expects it: ``row`` is a Message, or anything with its
    role, content, content_parts, extra, tool_calls, tool_call_id, name, pruned_content and
    pruned_tool_calls (the live context's light rows, read without model instances)."""
    out: dict = dict(row.extra or {})
    out["role"] = row.role
    if row.pruned_content is not None:
        out["content"] = row.pruned_content
    else:
        out["content"] = row.content_parts if row.content_parts is not None else row.content
    tool_calls = row.tool_calls
    if row.pruned_tool_calls is not None:
        tool_calls = row.pruned_tool_calls
    if tool_calls:
        out["tool_calls"] = tool_calls
    if row.tool_call_id:
        out["tool_call_id"] = row.tool_call_id
    if row.name:
        out["name"] = row.name
    return out


class AuditEntry(models.Model):
    """One operator action (console, admin, management command): who, when, what, on what.

    ``details`` holds ids and counts, never message content. An erasure is written first as
    ``running`` and completed at the end, so a crash leaves a record to resume from."""

    class Action(models.TextChoices):
        COMPRESS = "compress"
        RESET = "reset"
        CLEAR_GUARDS = "clear_guards", "clear guards"
        OVERRIDE_ADD = "override_add", "threshold override added"
        OVERRIDE_CHANGE = "override_change", "threshold override changed"
        OVERRIDE_DELETE = "override_delete", "threshold override deleted"
        KEY_CREATE = "key_create", "key created"
        KEY_REVOKE = "key_revoke", "key revoked"
        KEY_ROTATE = "key_rotate", "key rotated"
        ERASE = "erase"
        MEMORY_WRITE = "memory_write", "memory block written by the model"
        MEMORY_DELETE = "memory_delete", "memory block deleted by the model"

    class Status(models.TextChoices):
        DONE = "done"
        RUNNING = "running", "running (unfinished)"

    actor = models.CharField(
        max_length=200, help_text="admin:<user> for the admin and console, os:<user> for commands."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=20, choices=Action.choices)
    target = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DONE)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"
        indexes = [models.Index(fields=["action", "-created_at"], name="audit_action_idx")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} by {self.actor}"


class MemoryBlock(models.Model):
    """Text the model always sees: placed after the system prompt in every live context the
    channel's (or the session's) requests produce, counted in the live tokens, and never
    touched by a compression (Letta's memory blocks; Hermes's MEMORY.md and USER.md)."""

    channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_blocks"
    )
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_blocks"
    )
    label = models.CharField(max_length=100)
    text = models.TextField(blank=True)
    token_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["label", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(channel__isnull=True, session__isnull=False)
                | Q(channel__isnull=False, session__isnull=True),
                name="memory_block_has_one_owner",
            ),
            models.UniqueConstraint(
                fields=["channel", "label"],
                condition=Q(session__isnull=True),
                name="unique_channel_block_label",
            ),
            models.UniqueConstraint(
                fields=["session", "label"],
                condition=Q(channel__isnull=True),
                name="unique_session_block_label",
            ),
        ]

    def __str__(self) -> str:
        return self.label
