from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"
    verbose_name = "Compression"
    default_auto_field = "django.db.models.BigAutoField"
