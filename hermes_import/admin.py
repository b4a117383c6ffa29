from django.contrib import admin

from hermes_import.models import ImportedSession


@admin.register(ImportedSession)
class ImportedSessionAdmin(admin.ModelAdmin):
    """Which Hermes session landed where, and what could not be told from its rows."""

    list_display = ("hermes_id", "session", "conversation_root", "imported_at")
    search_fields = ("hermes_id", "conversation_root")
    readonly_fields = [f.name for f in ImportedSession._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
