"""PostgreSQL: a lookup's entry and first kept rows in one call whose plans are kept
(search.ranked.HEAD_FUNCTION). Nothing on SQLite, whose statements cost no round trip."""

from django.db import migrations


def create(apps, schema_editor):
    from search import ranked

    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ranked.CREATE_HEAD_FUNCTION)


def drop(apps, schema_editor):
    from search import ranked

    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ranked.DROP_HEAD_FUNCTION)


class Migration(migrations.Migration):
    dependencies = [("search", "0007_ranked_best_first")]

    operations = [migrations.RunPython(create, drop)]
