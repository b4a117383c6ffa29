"""A query's kept rows best first (search.ranked.kept reads only as many as a page needs)."""

from django.db import migrations


def create(apps, schema_editor):
    from search import ranked

    for statement in ranked.create_statements(schema_editor.connection.vendor):
        schema_editor.execute(statement)  # each IF NOT EXISTS: only the new index is made


def drop(apps, schema_editor):
    from search import ranked

    schema_editor.execute(f"DROP INDEX IF EXISTS {ranked.ROWS}_best")


class Migration(migrations.Migration):
    dependencies = [("search", "0006_ranked_queries")]

    operations = [migrations.RunPython(create, drop)]
