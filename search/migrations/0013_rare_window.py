"""PostgreSQL: a rare word's first lookup read through a kept plan (search.pg.RARE_WINDOW),
the words the planner's statistics count common (search.pg.COMMON, filled here from them) and
the first lookup's function that chooses between the two (search.ranked.HEAD_OR_FUNCTION, now
given the route's phrases and page). Nothing on SQLite."""

import importlib

from django.db import migrations


def create(apps, schema_editor):
    from search import pg, ranked

    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in pg.common_statements():
        schema_editor.execute(statement)
    schema_editor.execute(
        importlib.import_module(f"{__package__}.0012_ranked_head_or_function").DROP
    )
    schema_editor.execute(ranked.CREATE_HEAD_OR_FUNCTION)
    with schema_editor.connection.cursor() as cursor:
        pg.refresh_common(cursor)


def drop(apps, schema_editor):
    from search import pg, ranked

    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(ranked.DROP_HEAD_OR_FUNCTION)
    schema_editor.execute(
        importlib.import_module(f"{__package__}.0012_ranked_head_or_function").CREATE
    )
    for statement in pg.drop_common_statements():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0012_ranked_head_or_function")]

    operations = [migrations.RunPython(create, drop)]
