from django.apps import AppConfig


class CompressionConfig(AppConfig):
    name = "compression"
    verbose_name = "Compression"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Wire the layers: the store calls the policy after every append; the engine asks the
        policy's threshold and the paths' compactors, and the policy the paths' pruner, through
        hooks -- so no lower layer imports a higher one."""
        from compression import export
        from compression.engine import hooks as engine_hooks
        from compression.events import record_reset
        from compression.paths import codex, pruning
        from compression.policy import hooks as policy_hooks
        from compression.policy import triggers
        from compression.policy.threshold import threshold_for
        from compression.tasks import erase_task_records
        from sessions_app.hooks import (
            register_after_append,
            register_after_reset,
            register_erase,
            register_export,
        )

        register_after_append(triggers.after_append_hook, prepare=triggers.prepare_append)
        register_after_reset(record_reset)
        engine_hooks.register_target(lambda session: threshold_for(session).tokens)
        engine_hooks.register_compactor("codex", codex.compact_thread)
        policy_hooks.register_pruner(pruning.prune)
        register_erase(rows=erase_task_records)
        register_export("event", export.dump, export.load)
