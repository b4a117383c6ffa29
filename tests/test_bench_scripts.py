"""The benchmarks are scripts: ``python bench/X.py`` puts ``bench/`` on the import path ahead of
the standard library and the installed packages, so a script's name must not be one of theirs
(``bench/mcp.py`` once hid the MCP SDK from every script that loads the URLs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
ROOT = BENCH.parent


def _ours(origin: str) -> bool:
    """One of the project's own modules (the script's path insert keeps those first)."""
    where = Path(origin).resolve()
    return where.is_relative_to(ROOT) and not where.is_relative_to(Path(sys.prefix).resolve())


def test_no_bench_script_is_named_as_a_module_of_python_or_of_an_installed_package(
    monkeypatch,
) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != BENCH])
    shadowed = {}
    for script in sorted(BENCH.glob("*.py")):
        if not script.stem.isidentifier():
            continue
        spec = importlib.util.find_spec(script.stem)
        if spec is not None and (
            spec.origin in (None, "built-in", "frozen") or not _ours(spec.origin)
        ):
            shadowed[script.name] = spec.origin
    assert shadowed == {}, f"rename these scripts: {shadowed}"
