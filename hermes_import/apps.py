from django.apps import AppConfig


class HermesImportConfig(AppConfig):
    """Bringing a Hermes Agent home across: its sessions, their compactions, its memories."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "hermes_import"
    verbose_name = "Hermes Agent imports"
