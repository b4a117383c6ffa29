from django.apps import AppConfig
from django.db.backends.signals import connection_created


def _register(sender, connection, **kwargs) -> None:
    if connection.vendor == "sqlite":
        from search.fts import register_functions

        register_functions(connection)


class SearchConfig(AppConfig):
    name = "search"
    verbose_name = "Recall"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every SQLite connection gets the function the index triggers call.
        connection_created.connect(_register, dispatch_uid="hermes-search-functions")
