"""PostgreSQL: the functions that run a statement under fixed planner settings in one round
trip (search.pg.PLANNED): the trigram route's walks and index reads, and a kept query's newer
matches. Nothing on SQLite, which has no planner settings to fix."""

from django.db import migrations


def create(apps, schema_editor):
    from search import pg

    if schema_editor.connection.vendor == "postgresql":
        for statement in pg.planned_function_statements():
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    from search import pg

    if schema_editor.connection.vendor == "postgresql":
        for statement in pg.drop_planned_function_statements():
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0009_channel_rows_index")]

    operations = [migrations.RunPython(create, drop)]
