"""Session.next_sequence: the count of messages a mirroring client appended with a ``sequence``
(POST /sessions/{id}/messages stores each of them once, in order).

Added in place (``ALTER TABLE … ADD COLUMN … DEFAULT 0``): Django adds a NOT NULL column on
SQLite by rebuilding the table. The default stays in the database too, for the rows written
outside the ORM (the benchmarks insert sessions with plain SQL)."""

from django.db import migrations, models

TABLE = "sessions_app_session"


def add(apps, schema_editor):
    kind = "bigint unsigned" if schema_editor.connection.vendor == "sqlite" else "bigint"
    schema_editor.execute(
        f'ALTER TABLE "{TABLE}" ADD COLUMN "next_sequence" {kind} NOT NULL DEFAULT 0 '
        'CHECK ("next_sequence" >= 0)'
    )


def drop(apps, schema_editor):
    schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP COLUMN "next_sequence"')


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0015_message_notice")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add, drop)],
            state_operations=[
                migrations.AddField(
                    model_name="session",
                    name="next_sequence",
                    field=models.PositiveBigIntegerField(db_default=0, default=0),
                )
            ],
        )
    ]
