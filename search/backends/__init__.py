"""The query runners of each database (sqlite, postgres); ``choice.current()`` picks one."""
