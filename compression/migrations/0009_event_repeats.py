"""Repeated trigger decisions become one row with a count (see CompressionEvent.repeats)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("compression", "0008_edge_outcomes"),
    ]

    operations = [
        migrations.AddField(
            model_name="compressionevent",
            name="repeats",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="compressionevent",
            name="last_at",
            field=models.DateTimeField(blank=True, help_text="When it last happened.", null=True),
        ),
        migrations.AddField(
            model_name="compressionevent",
            name="shape",
            field=models.CharField(blank=True, editable=False, max_length=16, null=True),
        ),
        migrations.RunSQL(
            "UPDATE compression_compressionevent SET last_at = created_at, repeats = 1"
            " WHERE last_at IS NULL",
            migrations.RunSQL.noop,
            elidable=True,
        ),
    ]
