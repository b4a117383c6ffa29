from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"
    verbose_name = "Compression"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from compression.policy import triggers
        from sessions_app.hooks import register_after_append

        register_after_append(triggers.after_append_hook)
