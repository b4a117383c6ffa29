"""SQLite: the messages' channel in an index of its own (search.fts.CHANNEL_INDEX), so a
gateway's channel filter checks each FTS5 match in a small index that stays cached rather than
in the row's table page. Nothing on PostgreSQL, whose plans read the row anyway."""

from django.db import migrations


def create(apps, schema_editor):
    from search import fts

    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            fts.ensure_channel_index(cursor)  # what every migrate checks after (search.apps)


def drop(apps, schema_editor):
    from search import fts

    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(f"DROP INDEX IF EXISTS {fts.CHANNEL_INDEX}")


class Migration(migrations.Migration):
    dependencies = [("search", "0008_ranked_head_function")]

    operations = [migrations.RunPython(create, drop)]
