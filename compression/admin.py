"""Django's admin autodiscovery imports ``<app>.admin``: the classes live in the operator
pages (``compression.pages.admin``)."""

from compression.pages import admin  # noqa: F401 - registers the admin classes
