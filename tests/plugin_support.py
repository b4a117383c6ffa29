"""Importing the Hermes plugin (``hermes_plugin/``, a package of its own that Hermes's
environment installs) from the service's test suite, without installing it here: its modules
other than ``engine`` need nothing but the standard library."""

from __future__ import annotations

import sys
from pathlib import Path

PLUGIN_ROOT = Path(__file__).resolve().parent.parent / "hermes_plugin"
if str(PLUGIN_ROOT) not in sys.path:
    sys.path.insert(0, str(PLUGIN_ROOT))

from hermes_memory_plugin import convert, settings, store, sync  # noqa: E402

__all__ = ["PLUGIN_ROOT", "convert", "settings", "store", "sync"]
