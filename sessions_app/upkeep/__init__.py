"""Retention: moving idle sessions out of the live set (the store alone; backups, storage
reports and optimize read the search indexes too and live in ``hermes_site.upkeep``)."""
