from django.db import migrations, models


def analyze(apps, schema_editor):
    """PostgreSQL plans with the statistics it has: give it fresh ones for the new index (a
    restored or freshly loaded database may have none until autovacuum runs)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ANALYZE sessions_app_message")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0008_message_origin"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                condition=models.Q(("active", True)),
                fields=["session", "position", "-is_summary", "id"],
                name="msg_live_rows",
            ),
        ),
        migrations.RunPython(analyze, migrations.RunPython.noop, elidable=True),
    ]
