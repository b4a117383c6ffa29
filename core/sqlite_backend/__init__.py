"""Django's SQLite backend with a write gate in front of BEGIN IMMEDIATE (see ``gate``)."""
