"""What was imported from which Hermes store, so a re-run adds only what is new."""

from __future__ import annotations

from django.db import models

from sessions_app.models import Session


class ImportedSession(models.Model):
    """One Hermes session (one link of a conversation) and the session it landed in."""

    store = models.CharField(max_length=300, help_text="The Hermes store's id, or its path.")
    hermes_id = models.CharField(max_length=200)
    session = models.ForeignKey(Session, on_delete=models.PROTECT, related_name="hermes_links")
    conversation_root = models.CharField(max_length=200)
    fingerprint = models.CharField(
        max_length=100, help_text="rows:active:compacted:newest id when last imported"
    )
    notes = models.TextField(blank=True, help_text="What could not be told from the rows.")
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["store", "hermes_id"], name="one_import_per_link"),
        ]

    def __str__(self) -> str:
        return f"{self.hermes_id} -> {self.session_id}"
