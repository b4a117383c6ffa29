"""The PostgreSQL word, CJK-bigram and trigram indexes (search.pg); nothing on SQLite, which has
its FTS5 tables from 0001."""

from django.db import migrations


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from search import pg

    with schema_editor.connection.cursor() as cursor:
        pg.install(cursor)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from search import pg

    with schema_editor.connection.cursor() as cursor:
        for statement in pg.drop_statements():
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("search", "0002_recreate_triggers")]
    operations = [migrations.RunPython(create, drop)]
