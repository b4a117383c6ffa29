"""PostgreSQL: a query's entry or, when it has none, its route's first statement, in one call
(search.ranked.HEAD_OR_FUNCTION). Nothing on SQLite, whose statements cost no round trip."""

from django.db import migrations


def create(apps, schema_editor):
    from search import ranked

    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ranked.CREATE_HEAD_OR_FUNCTION)


def drop(apps, schema_editor):
    from search import ranked

    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ranked.DROP_HEAD_OR_FUNCTION)


class Migration(migrations.Migration):
    dependencies = [("search", "0011_page_functions")]

    operations = [migrations.RunPython(create, drop)]
