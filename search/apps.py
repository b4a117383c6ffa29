from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "search"
    verbose_name = "Recall"
    default_auto_field = "django.db.models.BigAutoField"
