"""The three FTS5 indexes and their triggers (SQLite only; PostgreSQL gets its own indexes)."""

from django.db import migrations


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    from search import fts

    with schema_editor.connection.cursor() as cursor:
        fts.install(cursor)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    from search import fts

    with schema_editor.connection.cursor() as cursor:
        for statement in fts.drop_statements():
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
