"""Fresh statistics for the tables the PostgreSQL search indexes (0003) were built on: a database
loaded or restored before them may have none, and the planner then guesses (see
sessions_app/analyze.py). Nothing to do on SQLite."""

from django.db import migrations


def analyze(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table in ("sessions_app_session", "sessions_app_message"):
            schema_editor.execute(f"ANALYZE {table}")


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0004_recent_indexes"),
        ("sessions_app", "0009_live_rows_index"),
    ]

    operations = [migrations.RunPython(analyze, migrations.RunPython.noop, elidable=True)]
