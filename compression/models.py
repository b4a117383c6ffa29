"""Compression's own records: the event trail and the run-time per-model threshold overrides."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from sessions_app.models import Message, Session


class CompressionEvent(models.Model):
    """One compression attempt or trigger decision, so an operator can answer "why (not)?"."""

    class Trigger(models.TextChoices):
        THRESHOLD_PRE = "threshold_pre", "token threshold (before call)"
        THRESHOLD_POST = "threshold_post", "token threshold (reported usage)"
        HYGIENE = "hygiene", "gateway hygiene"
        IDLE = "idle", "idle"
        ERROR = "error", "model error"
        PREFLIGHT = "preflight", "preflight"
        PLUGIN = "plugin", "context-engine plugin"
        MANUAL_API = "manual_api", "manual (API)"
        MANUAL_CLI = "manual_cli", "manual (CLI)"
        MANUAL_CHANNEL = "manual_channel", "manual (/compress)"
        MANUAL_ACP = "manual_acp", "manual (ACP)"
        MANUAL_MCP = "manual_mcp", "manual (MCP)"
        MANUAL_ADMIN = "manual_admin", "manual (console)"
        MICRO = "micro", "micro-compaction"
        PRUNE = "prune", "proactive pruning"
        SERVER = "server", "server-side compaction"
        CODEX = "codex", "Codex app server"
        EXHAUSTION = "exhaustion", "compression exhausted (F3)"

    class Outcome(models.TextChoices):
        COMPRESSED = "compressed", "compressed"
        FALLBACK = "fallback", "compressed with local fallback summary"
        SKIPPED = "skipped", "skipped"
        FAILED = "failed", "failed"
        LOCKED = "locked", "blocked by a guard"
        PRUNED = "pruned", "tool results pruned (no summary)"
        INEFFECTIVE = "ineffective", "not written: the summary would not shrink the context"
        RESET = "reset", "session reset"

    # What a trigger decided without compressing: repeated on every append, so collapsed into
    # one row per run (see repeats) and trimmed after events.retention_days.
    DECISIONS = (Outcome.SKIPPED, Outcome.LOCKED)
    # The outcomes of a pass that wrote a summary.
    WROTE = (Outcome.COMPRESSED, Outcome.FALLBACK)
    # An operator or a user asked: no guard holds these back, and a failed checkpoint asks them
    # to confirm instead of refusing outright.
    MANUAL = frozenset(
        {
            Trigger.MANUAL_API,
            Trigger.MANUAL_CLI,
            Trigger.MANUAL_CHANNEL,
            Trigger.MANUAL_ACP,
            Trigger.MANUAL_MCP,
            Trigger.MANUAL_ADMIN,
        }
    )

    class Path(models.TextChoices):
        ENGINE = "engine", "summary by this service"
        PRUNE = "prune", "proactive pruning"
        MICRO = "micro", "micro-compaction"
        OPENAI_SERVER = "openai_server", "OpenAI server-side compaction"
        CODEX_NATIVE = "codex_native", "Codex app server (native)"
        CODEX_MANAGED = "codex_managed", "Codex app server (managed)"

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="compression_events"
    )
    path = models.CharField(
        max_length=16,
        choices=Path.choices,
        default=Path.ENGINE,
        help_text="What did (or would have done) the compacting.",
    )
    trigger = models.CharField(max_length=20, choices=Trigger.choices)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    reason = models.CharField(max_length=300, blank=True)
    tokens_before = models.PositiveBigIntegerField(null=True, blank=True)
    tokens_after = models.PositiveBigIntegerField(null=True, blank=True)
    threshold_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    messages_before = models.PositiveIntegerField(null=True, blank=True)
    messages_after = models.PositiveIntegerField(null=True, blank=True)
    rows_archived = models.PositiveIntegerField(default=0)
    summary_message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    summary_model = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(
        default=1, help_text="Pass number within one compression run (1 = the run's first)."
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # A trigger decision repeated on consecutive appends (the same trigger, outcome and reason
    # but for its numbers) is one row: how many times, and when the last one was. (Nullable
    # so that adding them to a long trail is instant on SQLite; rows always have them.)
    repeats = models.PositiveIntegerField(null=True, blank=True)
    last_at = models.DateTimeField(null=True, blank=True, help_text="When it last happened.")
    shape = models.CharField(max_length=16, null=True, blank=True, editable=False)
    # What left the service masked (core.redaction): counts by kind, never the values.
    redactions = models.JSONField(null=True, blank=True, editable=False)
    # A written summary scored against the span it replaced (compression.engine.retention):
    # the share of the span's salient items the summary, head and tail still carry.
    retention = models.FloatField(null=True, blank=True, editable=False)
    salient_items = models.PositiveIntegerField(null=True, blank=True, editable=False)
    salient_kept = models.PositiveIntegerField(null=True, blank=True, editable=False)
    salient_missed = models.JSONField(null=True, blank=True, editable=False)
    below_floor = models.BooleanField(
        null=True, blank=True, editable=False, help_text="Scored under compression.scoring.floor."
    )
    # manage.py probe_summary: the questions asked of the summary and how they were answered.
    probe = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["session", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.get_trigger_display()}: {self.outcome}"

    @property
    def times(self) -> int:
        return self.repeats or 1

    @property
    def fell_back_because(self) -> str:
        """For a fallback, why the model's summary was not used (its error's first line); ""
        for any other outcome. What a person reads after "Compress now" fell back."""
        if self.outcome != self.Outcome.FALLBACK:
            return ""
        lines = (self.error or "").strip().splitlines()
        return lines[0][:300] if lines else "the summary model gave no usable summary"

    @property
    def masked_count(self) -> int:
        return sum((self.redactions or {}).values())

    @property
    def savings_ratio(self) -> float | None:
        if not self.tokens_before or self.tokens_after is None:
            return None
        return 1 - self.tokens_after / self.tokens_before


class ModelThresholdOverride(models.Model):
    """A run-time override of the trigger ratio for models whose name contains ``pattern``.

    The longest matching pattern wins, here and in the config file's ``model_thresholds``.
    """

    pattern = models.CharField(
        max_length=200, unique=True, help_text="Substring of the model name, e.g. 'claude-sonnet'."
    )
    ratio = models.FloatField(
        validators=[MinValueValidator(0.01), MaxValueValidator(1.0)],
        help_text="Fraction of (context window - output reserve) at which to compress.",
    )
    threshold_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1000)],
        help_text="Optional absolute cap in tokens: min(ratio result, cap).",
    )
    enabled = models.BooleanField(default=True)
    note = models.CharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pattern"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(ratio__gt=0) & models.Q(ratio__lte=1),
                name="override_ratio_in_range",
            ),
            models.CheckConstraint(
                condition=models.Q(threshold_tokens__isnull=True)
                | models.Q(threshold_tokens__gte=1000),
                name="override_cap_at_least_1000",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pattern} → {self.ratio:.2f}"


class HookDelivery(models.Model):
    """One attempt to deliver a compaction hook (``compression.hooks``): what was sent where,
    and how it went, so an operator can answer "did the checkpoint run?"."""

    class Kind(models.TextChoices):
        PRE_COMPACT = "pre_compact", "pre-compact"
        POST_COMPACT = "post_compact", "post-compact"

    kind = models.CharField(max_length=12, choices=Kind.choices)
    url = models.CharField(max_length=2000)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="hook_deliveries")
    event = models.ForeignKey(
        CompressionEvent,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="hook_deliveries",
        help_text="The compression event this delivery belongs to.",
    )
    trigger = models.CharField(max_length=20, choices=CompressionEvent.Trigger.choices)
    delivery_id = models.UUIDField(
        db_index=True, help_text="X-Hermes-Delivery: the same for every retry of one delivery."
    )
    attempt = models.PositiveSmallIntegerField(default=1)
    ok = models.BooleanField(default=False)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    signed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["session", "-created_at"])]
        verbose_name_plural = "hook deliveries"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.attempt}: {'ok' if self.ok else 'failed'}"
