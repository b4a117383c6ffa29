"""Pins (Message.pinned) and memory blocks. The column is added in place
(sessions_app/migrations/_inplace.py: Django's SQLite path would rebuild the messages table)."""

import django.db.models.deletion
from django.db import migrations, models

from sessions_app.migrations._inplace import add_flag


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_keys_and_audit"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="message",
                    name="pinned",
                    field=models.BooleanField(default=False),
                ),
            ],
            database_operations=[migrations.RunPython(*add_flag("pinned"))],
        ),
        migrations.CreateModel(
            name="MemoryBlock",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("label", models.CharField(max_length=100)),
                ("text", models.TextField(blank=True)),
                ("token_count", models.PositiveIntegerField(default=0)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "channel",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memory_blocks",
                        to="sessions_app.channel",
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memory_blocks",
                        to="sessions_app.session",
                    ),
                ),
            ],
            options={
                "ordering": ["label", "id"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("channel__isnull", True), ("session__isnull", False)),
                            models.Q(("channel__isnull", False), ("session__isnull", True)),
                            _connector="OR",
                        ),
                        name="memory_block_has_one_owner",
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("session__isnull", True)),
                        fields=("channel", "label"),
                        name="unique_channel_block_label",
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("channel__isnull", True)),
                        fields=("session", "label"),
                        name="unique_session_block_label",
                    ),
                ],
            },
        ),
    ]
