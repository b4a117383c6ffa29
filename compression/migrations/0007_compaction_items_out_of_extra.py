"""OpenAI compaction items move from ``Message.extra`` (replayed to every chat-completions call
and shown by GET /context) to ``Message.provider_item`` (sent only to the Responses API)."""

from django.db import migrations

KEY = "openai_compaction"


def move(apps, schema_editor):
    Message = apps.get_model("sessions_app", "Message")
    rows = Message.objects.using(schema_editor.connection.alias).filter(is_summary=True)
    for row in rows.exclude(extra=None).iterator():
        if isinstance(row.extra, dict) and KEY in row.extra:
            extra = dict(row.extra)
            row.provider_item = extra.pop(KEY)
            row.extra = extra or None
            row.save(update_fields=["provider_item", "extra"])


def back(apps, schema_editor):
    Message = apps.get_model("sessions_app", "Message")
    rows = Message.objects.using(schema_editor.connection.alias).exclude(provider_item=None)
    for row in rows.iterator():
        row.extra = {**(row.extra or {}), KEY: row.provider_item}
        row.provider_item = None
        row.save(update_fields=["provider_item", "extra"])


class Migration(migrations.Migration):
    dependencies = [
        ("compression", "0006_event_path"),
        ("sessions_app", "0005_message_provider_item"),
    ]
    operations = [migrations.RunPython(move, back)]
