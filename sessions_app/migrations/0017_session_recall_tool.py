"""Session.recall_tool: the name of the tool the client's model recalls originals with, named by
every summary's note and progress notice (a Hermes plugin offers the service's recall as
``memory_recall``: Hermes's own ``session_search`` searches Hermes's store).

Added in place (``ALTER TABLE … ADD COLUMN … DEFAULT``), as 0016: Django adds a NOT NULL column
on SQLite by rebuilding the table."""

from django.db import migrations, models

TABLE = "sessions_app_session"


def add(apps, schema_editor):
    schema_editor.execute(
        f'ALTER TABLE "{TABLE}" ADD COLUMN "recall_tool" varchar(64) NOT NULL '
        "DEFAULT 'session_search'"
    )


def drop(apps, schema_editor):
    schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP COLUMN "recall_tool"')


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0016_session_next_sequence")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(add, drop)],
            state_operations=[
                migrations.AddField(
                    model_name="session",
                    name="recall_tool",
                    field=models.CharField(
                        db_default="session_search", default="session_search", max_length=64
                    ),
                )
            ],
        )
    ]
