"""The recent twins of the three FTS5 indexes (SQLite), the triggers that also feed them, and
the worker's schedule that trims them to the newest ``search.recent_rows`` messages.

Filling the twins holds the write lock for a few seconds per 100,000 messages: migrate with the
service stopped, as always. Reversing removes the schedule and leaves the twins and triggers,
which code from before this migration ignores and this migration refills when it runs again."""

from django.db import migrations

NAME = "hermes: trim the recent search indexes"


def create(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(
        schema_editor.connection.alias
    ).update_or_create(
        name=NAME,
        defaults={
            "func": "search.tasks.trim_recent_index",
            "schedule_type": "I",
            "minutes": 1,
            "repeats": -1,
        },
    )
    if schema_editor.connection.vendor != "sqlite":
        return
    from search import fts

    with schema_editor.connection.cursor() as cursor:
        for trigger in fts.TRIGGERS:  # their bodies changed: they feed the recent indexes too
            cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for statement in fts.create_statements():
            cursor.execute(statement)
        fts.fill_recent(cursor)


def drop(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(
        name=NAME
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0003_postgres_indexes"),
        ("django_q", "0018_task_success_index"),
    ]
    operations = [migrations.RunPython(create, drop)]
