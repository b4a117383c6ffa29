from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from compression.models import CompressionEvent, HookDelivery, ModelThresholdOverride
from sessions_app import audit
from sessions_app.admin import HermesAdmin, ReadOnlyAdmin, SessionAdmin
from sessions_app.audit import admin_actor
from sessions_app.models import AuditEntry, Session
from sessions_app.selectors.sessions import models_in_use
from sessions_app.services import reset_session


@admin.register(CompressionEvent)
class CompressionEventAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "session",
        "trigger",
        "path",
        "outcome",
        "repeats",
        "last_at",
        "tokens_before",
        "tokens_after",
        "savings",
        "rows_archived",
        "short_reason",
    )
    list_filter = ("trigger", "path", "outcome", "session__channel")
    search_fields = ("session__id", "session__title", "reason", "error")
    list_select_related = ("session",)
    readonly_fields = [*(f.name for f in CompressionEvent._meta.fields), "hook_deliveries"]

    @admin.display(description="hook deliveries")
    def hook_deliveries(self, obj: CompressionEvent) -> str:
        from django.urls import reverse
        from django.utils.html import format_html

        count = obj.hook_deliveries.count()
        if not count:
            return "—"
        url = reverse("admin:compression_hookdelivery_changelist")
        return format_html('<a href="{}?event__id__exact={}">{}</a>', url, obj.pk, count)

    @admin.display(description="reason")
    def short_reason(self, obj: CompressionEvent) -> str:
        # The whole reason is on the event's own page; the list stays one line or two a row.
        reason = obj.reason or ""
        return reason if len(reason) <= 160 else reason[:159] + "…"

    @admin.display(description="saved")
    def savings(self, obj: CompressionEvent) -> str:
        ratio = obj.savings_ratio
        return "—" if ratio is None else f"{ratio:.0%}"


@admin.register(HookDelivery)
class HookDeliveryAdmin(ReadOnlyAdmin):
    """Every attempt to deliver a compaction hook (compression.hooks), as it went."""

    list_display = (
        "created_at",
        "kind",
        "url",
        "session",
        "event",
        "trigger",
        "attempt",
        "ok",
        "status_code",
        "error",
        "duration_ms",
    )
    list_filter = ("kind", "ok", "trigger")
    search_fields = ("session__id", "url", "error", "delivery_id")
    list_select_related = ("session", "event")
    readonly_fields = [f.name for f in HookDelivery._meta.fields]


MODELS_SHOWN = 12


@admin.register(ModelThresholdOverride)
class ModelThresholdOverrideAdmin(HermesAdmin):
    list_display = (
        "pattern",
        "ratio",
        "threshold_tokens",
        "enabled",
        "computed_threshold",
        "note",
        "updated_at",
    )
    list_editable = ("ratio", "threshold_tokens", "enabled")
    search_fields = ("pattern", "note")
    readonly_fields = ("computed_threshold", "small_window_effect")

    @staticmethod
    def _fields(obj: ModelThresholdOverride) -> dict:
        return {
            "pattern": obj.pattern,
            "ratio": obj.ratio,
            "threshold_tokens": obj.threshold_tokens,
            "enabled": obj.enabled,
        }

    def save_model(self, request, obj, form, change) -> None:
        """Every edit (the form or the list's editable columns) goes into the audit log with
        what changed from what."""
        before = (
            self._fields(ModelThresholdOverride.objects.get(pk=obj.pk))
            if change and obj.pk
            else None
        )
        super().save_model(request, obj, form, change)
        after = self._fields(obj)
        if before is None:
            action, details = AuditEntry.Action.OVERRIDE_ADD, {"values": after}
        else:
            changed = {k: [before[k], v] for k, v in after.items() if before[k] != v}
            if not changed:
                return
            action, details = AuditEntry.Action.OVERRIDE_CHANGE, {"changed": changed}
        audit.record(admin_actor(request), action, f"threshold override {obj.pattern}", details)

    def delete_model(self, request, obj) -> None:
        values = self._fields(obj)
        super().delete_model(request, obj)
        audit.record(
            admin_actor(request),
            AuditEntry.Action.OVERRIDE_DELETE,
            f"threshold override {obj.pattern}",
            {"values": values},
        )

    def delete_queryset(self, request, queryset) -> None:
        gone = [self._fields(o) for o in queryset]
        super().delete_queryset(request, queryset)
        for values in gone:
            audit.record(
                admin_actor(request),
                AuditEntry.Action.OVERRIDE_DELETE,
                f"threshold override {values['pattern']}",
                {"values": values},
            )

    @staticmethod
    def _matches(obj: ModelThresholdOverride) -> list[tuple[str, int, int, int]]:
        """(model, window, threshold with this override, without it) for each model it applies
        to -- the catalog's and those of open sessions, wherever it is the override that wins --
        at that model's own window, as the engine computes it (threshold_for)."""
        from compression.policy.threshold import (
            Override,
            compute_threshold,
            config_overrides,
            match_override,
            table_overrides,
        )
        from core.config import get_config
        from sessions_app.catalog import KNOWN_CONTEXT_WINDOWS

        whole = get_config()
        config, provider = whole.compression, whole.model.provider
        mine = Override(obj.pattern, obj.ratio, obj.threshold_tokens, "table")
        others = [
            o for o in config_overrides(config) + table_overrides() if o.pattern != obj.pattern
        ]
        models = dict(KNOWN_CONTEXT_WINDOWS)
        models.update(models_in_use(MODELS_SHOWN))
        found = []
        for model, window in sorted(models.items()):
            if match_override(model, [mine, *others], provider) is not mine:
                continue
            with_it = compute_threshold(model, window, config, [mine, *others], provider=provider)
            without = compute_threshold(model, window, config, others, provider=provider)
            found.append((model, window, with_it.tokens, without.tokens))
        return found

    @admin.display(description="threshold for the models it matches, at their own windows")
    def computed_threshold(self, obj: ModelThresholdOverride) -> str:
        """What this override makes the trigger fire at, after floors and caps, for each model
        it applies to, at that model's own window; with no known model matching, at 128K / 200K
        / 1M windows."""
        from compression.policy.threshold import Override, compute_threshold
        from core.config import get_config

        if obj.pk is None or (obj.ratio is None and obj.threshold_tokens is None):
            return "—"
        lines = [f"{m} ({w:,}): {tokens:,}" for m, w, tokens, _ in self._matches(obj)]
        if not lines:
            whole = get_config()
            mine = Override(obj.pattern, obj.ratio, obj.threshold_tokens, "table")
            values = [
                compute_threshold(
                    obj.pattern, window, whole.compression, [mine], provider=whole.model.provider
                ).tokens
                for window in (128_000, 200_000, 1_000_000)
            ]
            return "no known model matches; at 128K / 200K / 1M windows: " + " / ".join(
                f"{v:,}" for v in values
            )
        shown = lines[:MODELS_SHOWN]
        more = f"; and {len(lines) - len(shown)} more" if len(lines) > len(shown) else ""
        return "; ".join(shown) + more

    @admin.display(description="below the small-window ratio")
    def small_window_effect(self, obj: ModelThresholdOverride) -> str:
        """An override sets the ratio after the raise for windows under 512K (deliberately: an
        operator's word is final), so one below 0.75 lowers those models' thresholds rather than
        being raised; the form says so, with what each matching small-window model gets."""
        from core.config import get_config

        config = get_config().compression
        floor, limit = config.small_window_threshold, config.small_window_limit_tokens
        if obj.pk is None or obj.ratio is None or obj.ratio >= floor:
            return "—"
        head = (
            f"Below {floor:g}: for a model with a window under {limit // 1000:,}K this override "
            f"replaces the raise to {floor:g} (it is not raised)"
        )
        small = [
            f"{m} ({w:,}) compresses at {tokens:,} instead of {without:,}"
            for m, w, tokens, without in self._matches(obj)
            if w < limit
        ]
        if not small:
            return head + "; none of the models it matches has such a window."
        more = f"; and {len(small) - MODELS_SHOWN} more" if len(small) > MODELS_SHOWN else ""
        return head + " — " + "; ".join(small[:MODELS_SHOWN]) + more


# --- Compression actions on the store's session admin -----------------------------------------
# The store's admin knows nothing of compression (data flows one way); this app extends it.


class GuardStateFilter(admin.SimpleListFilter):
    """Which sessions the guards are holding back right now (expired guards do not count)."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [
            ("compressing", "compressing now"),
            ("cooldown", "in cooldown"),
            ("locked", "anti-thrash locked"),
            ("failing", "failing"),
            ("clear", "no guard"),
        ]

    def queryset(self, request, queryset):
        now = timezone.now()
        held = {
            "compressing": Q(compressing_until__gt=now),
            "cooldown": Q(cooldown_until__gt=now),
            "locked": Q(thrash_lock_until__gt=now),
            "failing": Q(failure_streak__gt=0),
        }
        value = self.value()
        if value in held:
            return queryset.filter(held[value])
        if value == "clear":
            for condition in held.values():
                queryset = queryset.exclude(condition)
        return queryset


class CompressingSessionAdmin(SessionAdmin):
    actions = ["compress_now", "reset_sessions", "clear_guards", *SessionAdmin.actions]
    list_display = (*SessionAdmin.list_display, "timeline")
    list_filter = (GuardStateFilter, *SessionAdmin.list_filter)
    readonly_fields = (*SessionAdmin.readonly_fields, "timeline")

    def get_fieldsets(self, request, obj=None):
        (name, options), *rest = super().get_fieldsets(request, obj)
        return [(name, {**options, "fields": (*options["fields"], "timeline")}), *rest]

    @admin.display(description="timeline")
    def timeline(self, obj: Session) -> str:
        from django.urls import reverse
        from django.utils.html import format_html

        return format_html('<a href="{}">open</a>', reverse("console:timeline", args=[obj.pk]))

    @admin.action(
        description="Compress now (in the background, ignoring cooldown)", permissions=["change"]
    )
    def compress_now(self, request: HttpRequest, queryset) -> None:
        from compression.policy.triggers import enqueue_manual

        sessions = list(queryset)
        for session in sessions:
            task_id = enqueue_manual(session, CompressionEvent.Trigger.MANUAL_ADMIN)
            audit.record(
                admin_actor(request),
                AuditEntry.Action.COMPRESS,
                f"session {session.pk}",
                {"via": "admin", "session": str(session.pk), "task": task_id},
            )
        self.message_user(
            request,
            f"Compression queued for {len(sessions)} session(s); see Compression events for "
            "results.",
        )

    @admin.action(
        description="Reset sessions (archive their live messages; nothing is deleted)",
        permissions=["change"],
    )
    def reset_sessions(self, request: HttpRequest, queryset):
        if not self.confirmed(request):
            return self.confirmation(
                request,
                queryset,
                action="reset_sessions",
                title="Reset sessions?",
                explanation=[
                    "Resetting archives every live message of these sessions except their system "
                    "prompt. Nothing is deleted: the archived messages stay in the database and "
                    "in search."
                ],
                columns=("session", "live messages"),
                rows=[(session, session.live_messages) for session in queryset],
                yes="Yes, reset",
            )
        note = f"reset from the admin by {request.user.get_username()}"
        archived = 0
        for session in queryset:
            rows = reset_session(session, source=CompressionEvent.Trigger.MANUAL_ADMIN, note=note)
            archived += rows
            audit.record(
                admin_actor(request),
                AuditEntry.Action.RESET,
                f"session {session.pk}",
                {"via": "admin", "session": str(session.pk), "rows_archived": rows},
            )
        self.message_user(
            request,
            f"Reset {queryset.count()} session(s); {archived} message(s) archived (still "
            "searchable).",
            messages.SUCCESS,
        )
        return None

    @admin.action(
        description="Clear cooldown, anti-thrash lock and failure streaks", permissions=["change"]
    )
    def clear_guards(self, request: HttpRequest, queryset) -> None:
        ids = [str(pk) for pk in queryset.values_list("pk", flat=True)]
        count = queryset.update(
            cooldown_until=None, thrash_lock_until=None, failure_streak=0, ineffective_streak=0
        )
        audit.record(
            admin_actor(request),
            AuditEntry.Action.CLEAR_GUARDS,
            f"{count} session(s)",
            {"via": "admin", "sessions": ids[:100], "count": count},
        )
        self.message_user(request, f"Cleared the guards of {count} session(s).")


admin.site.unregister(Session)
admin.site.register(Session, CompressingSessionAdmin)
