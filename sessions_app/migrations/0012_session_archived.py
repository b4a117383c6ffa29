"""Session.archived_at (retention archives idle sessions; an append clears it) and the daily
task that archives them (retention.archive_idle_days; it does nothing while that is 0)."""

from django.db import migrations, models

NAME = "hermes: archive idle sessions"


def create(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.using(schema_editor.connection.alias).update_or_create(
        name=NAME,
        defaults={
            "func": "sessions_app.upkeep.retention.archive_idle_task",
            "schedule_type": "D",
            "repeats": -1,
        },
    )


def drop(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.using(schema_editor.connection.alias).filter(
        name=NAME
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_timeline_pages"),
        ("django_q", "0018_task_success_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="archived_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(create, drop),
    ]
