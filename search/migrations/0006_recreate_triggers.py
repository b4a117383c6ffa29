"""sessions_app 0014 (Message.pinned) and 0015 (Message.is_notice and its check) rebuilt the
messages table on SQLite, which drops its triggers; recreate them and rebuild the indexes from
the table. (The post_migrate safety net in search.apps does not run: Django sends post_migrate
only to apps with a models module, and search has none.)"""

from django.db import migrations


def recreate(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    from search import fts

    with schema_editor.connection.cursor() as cursor:
        fts.install(cursor)


class Migration(migrations.Migration):
    dependencies = [("search", "0005_analyze"), ("sessions_app", "0015_message_notice")]
    operations = [migrations.RunPython(recreate, migrations.RunPython.noop)]
