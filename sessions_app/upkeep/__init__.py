"""Keeping the store for years: backups and restores, storage reports, optimisation, retention."""
