"""sessions_app 0002 rebuilt the messages table on SQLite (a constraint changed), which drops
its triggers; recreate them and rebuild the indexes from the table."""

from django.db import migrations


def recreate(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    from search import fts

    with schema_editor.connection.cursor() as cursor:
        fts.install(cursor)


class Migration(migrations.Migration):
    dependencies = [("search", "0001_fts5_indexes"), ("sessions_app", "0002_compression_support")]
    operations = [migrations.RunPython(recreate, migrations.RunPython.noop)]
