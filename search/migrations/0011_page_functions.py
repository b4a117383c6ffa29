"""PostgreSQL: the functions that read a page of hits and their windows' rows with a plan made
once per connection (search.rows.PAGE_HITS, PAGE_NEARBY). Nothing on SQLite, whose statements
cost microseconds to prepare."""

from django.db import migrations


def create(apps, schema_editor):
    from search import rows

    if schema_editor.connection.vendor == "postgresql":
        for statement in rows.page_function_statements(schema_editor.connection):
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    from search import rows

    if schema_editor.connection.vendor == "postgresql":
        for statement in rows.drop_page_function_statements():
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0010_planned_functions")]

    operations = [migrations.RunPython(create, drop)]
