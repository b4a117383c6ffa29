"""The hourly trim of old trigger decisions (events.retention_days, 90 by default)."""

from django.db import migrations

NAME = "hermes: trim old trigger decisions"


def create(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).update_or_create(
        name=NAME,
        defaults={
            "func": "compression.tasks.trim_events",
            "schedule_type": "I",
            "minutes": 60,
            "repeats": -1,
        },
    )


def drop(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(
        name=NAME
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("compression", "0009_event_repeats"),
        ("django_q", "0018_task_success_index"),
    ]
    operations = [migrations.RunPython(create, drop)]
