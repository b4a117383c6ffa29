"""Operator upkeep that reads the store and its search indexes together: backups, storage
reports, optimize (above both apps, so in the site layer)."""
