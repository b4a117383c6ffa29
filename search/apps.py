import logging

from django.apps import AppConfig, apps
from django.db import connections, transaction
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate

logger = logging.getLogger(__name__)


def _register(sender, connection, **kwargs) -> None:
    if connection.vendor == "sqlite":
        from search.fts import register_functions

        register_functions(connection)


def _ensure_indexes(sender, using: str = "default", **kwargs) -> None:
    """After every migrate: if the index triggers are missing, recreate them and rebuild; if
    the channel index is (fts.CHANNEL_INDEX), create it.

    SQLite cannot alter most table constraints in place, so Django rebuilds the messages table
    (copy, drop, rename) for such migrations, and a dropped table takes its triggers with it.
    """
    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    from search import fts

    with transaction.atomic(using=using), connection.cursor() as cursor:
        if fts.ensure_channel_index(cursor):
            logger.warning("search channel index missing after migrate; recreated")
        if fts.triggers_present(cursor):
            if fts.state_present(cursor) and (version := fts.stale(cursor)) is not None:
                logger.error(
                    "search indexes hold text version %s, the code computes %s: run "
                    "manage.py reindex",
                    version,
                    fts.TEXT_VERSION,
                )
            return
        logger.warning("search index triggers missing after migrate; recreating and reindexing")
        fts.install(cursor)  # one transaction: no write lands between emptying and refilling


class SearchConfig(AppConfig):
    name = "search"
    verbose_name = "Recall"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every SQLite connection gets the function the index triggers call.
        connection_created.connect(_register, dispatch_uid="hermes-search-functions")
        # Django sends post_migrate only to apps with a models module, which search has not:
        # listen for the app whose table the triggers are on.
        post_migrate.connect(
            _ensure_indexes,
            sender=apps.get_app_config("sessions_app"),
            dispatch_uid="hermes-search-indexes",
        )
        from search import erase
        from sessions_app.hooks import register_erase

        register_erase(before=erase.before, after=erase.after)
