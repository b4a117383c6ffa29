"""Message.is_notice: the progress notices of ``compression.progress_notices``.

Added in place, as 0014 adds ``pinned`` (sessions_app/migrations/_inplace.py). The check that
a notice is never live nor indexed is a database constraint on PostgreSQL; SQLite cannot add one
to an existing table without rebuilding it, so there the code that writes notices
(compression/engine/notice.py) is what keeps it."""

from django.db import migrations, models

from sessions_app.migrations._inplace import add_flag

CHECK = models.CheckConstraint(
    condition=models.Q(
        models.Q(("active", True), ("is_notice", True), _negated=True),
        models.Q(("compressed", True), ("is_notice", True), _negated=True),
    ),
    name="notices_are_never_live_nor_indexed",
)


ADD_COLUMN, DROP_COLUMN = add_flag("is_notice")


def add(apps, schema_editor):
    ADD_COLUMN(apps, schema_editor)
    if schema_editor.connection.vendor != "sqlite":
        # Written out: the model this function would be given has no is_notice yet.
        schema_editor.execute(
            'ALTER TABLE "sessions_app_message" ADD CONSTRAINT '
            '"notices_are_never_live_nor_indexed" CHECK '
            '(NOT ("active" AND "is_notice") AND NOT ("compressed" AND "is_notice"))'
        )


def remove(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        schema_editor.execute(
            'ALTER TABLE "sessions_app_message" DROP CONSTRAINT '
            '"notices_are_never_live_nor_indexed"'
        )
    DROP_COLUMN(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_pins_and_memory"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="message",
                    name="is_notice",
                    field=models.BooleanField(default=False),
                ),
                migrations.AddConstraint(model_name="message", constraint=CHECK),
            ],
            database_operations=[migrations.RunPython(add, remove)],
        ),
    ]
