"""The idle trigger's schedule (T3). It runs every minute and returns at once while
``idle_compact_after_seconds`` is 0 (the default), so turning it on is a config change only."""

from django.db import migrations

NAME = "hermes: idle compression sweep"


def create(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).update_or_create(
        name=NAME,
        defaults={
            "func": "compression.tasks.idle_sweep",
            "schedule_type": "I",
            "minutes": 1,
            "repeats": -1,
        },
    )


def drop(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(
        name=NAME
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("compression", "0002_override_cap_minimum"),
        ("django_q", "0018_task_success_index"),
    ]
    operations = [migrations.RunPython(create, drop)]
