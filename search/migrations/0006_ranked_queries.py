"""The best rows of common queries (search.ranked): two plain tables on either database, filled
by the worker as lookups ask. Empty on creation; nothing to fill."""

from django.db import migrations


def create(apps, schema_editor):
    from search import ranked

    for statement in ranked.create_statements(schema_editor.connection.vendor):
        schema_editor.execute(statement)


def drop(apps, schema_editor):
    from search import ranked

    for statement in ranked.DROP_STATEMENTS:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0005_analyze")]

    operations = [migrations.RunPython(create, drop)]
