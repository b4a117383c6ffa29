from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from compression.models import CompressionEvent, ModelThresholdOverride


@admin.register(CompressionEvent)
class CompressionEventAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "session",
        "trigger",
        "outcome",
        "tokens_before",
        "tokens_after",
        "savings",
        "rows_archived",
        "reason",
    )
    list_filter = ("trigger", "outcome", "session__channel")
    search_fields = ("session__id", "session__title", "reason", "error")
    list_select_related = ("session",)
    readonly_fields = [f.name for f in CompressionEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="saved")
    def savings(self, obj: CompressionEvent) -> str:
        ratio = obj.savings_ratio
        return "—" if ratio is None else f"{ratio:.0%}"


@admin.register(ModelThresholdOverride)
class ModelThresholdOverrideAdmin(admin.ModelAdmin):
    list_display = ("pattern", "ratio", "threshold_tokens", "enabled", "note", "updated_at")
    list_editable = ("ratio", "threshold_tokens", "enabled")
    search_fields = ("pattern", "note")
