"""The arrows between the parts (docs/architecture.md), checked on every import in the code --
module-level and inside functions alike -- so a shortcut across them fails here, not in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("core", "hermes_site", "agent", "sessions_app", "search", "compression", "hermes_import")

# Each layer and the layers it may import. A module belongs to the longest prefix listed.
LAYERS: dict[str, set[str]] = {
    # core/: configuration, logs, errors, metrics instruments, storage helpers, middleware.
    "ground": set(),
    "store": {"ground"},
    "search": {"store", "ground"},  # recall
    "records": {"store", "ground"},  # compression.models, compression.events
    "engine": {"records", "store", "ground"},
    "policy": {"engine", "records", "store", "ground"},
    "paths": {"engine", "records", "store", "ground"},
    "testing": {"ground"},  # loopback servers: stand alone
    # Bringing a Hermes Agent home across: it writes into the store, nothing else.
    "importer": {"store", "ground"},
    "import_testing": {"importer"},  # Hermes homes for tests, in Hermes's own schema
}
# Compression's console pages and entry points (Django's app config, URLs, the API, queued
# tasks, commands) take anything of compression and the store; never recall.
LAYERS["pages"] = {"policy", "paths", *LAYERS["policy"], *LAYERS["paths"]}
LAYERS["entry"] = {"pages", *LAYERS["pages"]}
# The agent stands above the engine and recall: the turn offers the model session_search, and
# its endpoints answer with the engine's compression results (compression.api).
LAYERS["agent"] = {"entry", "search", *LAYERS["entry"]}
# The roof: settings, URLs, serving; it assembles every part.
LAYERS["site"] = {"agent", "importer", *LAYERS["agent"]}
# The demo plays its history through the live triggers against the loopback model; nothing
# the service runs imports it (only ``manage.py setup_demo``, which is part of it).
LAYERS["demo"] = {"entry", "policy", "engine", "records", "store", "ground", "testing"}
PREFIXES = {
    "core": "ground",
    "hermes_site": "site",
    "agent": "agent",
    "sessions_app": "store",
    "search": "search",
    "compression.models": "records",
    "compression.events": "records",
    "compression.migrations": "records",
    "compression.engine": "engine",
    "compression.policy": "policy",
    "compression.paths": "paths",
    "compression.pages": "pages",
    "compression.testing": "testing",
    "compression.demo": "demo",
    "compression.management.commands.setup_demo": "demo",
    "compression": "entry",
    "hermes_import": "importer",
    "hermes_import.testing": "import_testing",
}


def layer(module: str) -> str | None:
    best = max(
        (p for p in PREFIXES if module == p or module.startswith(p + ".")), key=len, default=None
    )
    return PREFIXES[best] if best else None


def modules() -> dict[str, Path]:
    found = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module ``path`` imports, wherever the import statement is."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # "from package import module" imports the module; else the package's name.
            names = [f"{node.module}.{a.name}" for a in node.names]
            names = [n if n in known else node.module for n in names]
        else:
            continue
        out.update(n for n in names if n.split(".")[0] in APPS)
    return out


def test_every_import_follows_the_arrows():
    known = modules()
    wrong = []
    for name, path in known.items():
        mine = layer(name)
        for target in imports(path, known):
            theirs = layer(target)
            if theirs is None or theirs == mine:
                continue
            if theirs not in LAYERS[mine]:
                wrong.append(f"{name} ({mine}) imports {target} ({theirs})")
    assert wrong == [], "\n".join(sorted(wrong))


def test_no_production_module_imports_a_test_server():
    known = modules()
    wrong = [
        f"{name} imports {target}"
        for name, path in known.items()
        if layer(name) not in ("testing", "import_testing", "demo")
        for target in imports(path, known)
        if layer(target) in ("testing", "import_testing")
    ]
    assert wrong == [], wrong


def test_there_is_no_import_cycle_between_modules():
    known = modules()
    graph = {
        name: {t for t in imports(path, known) if t in known and t != name}
        for name, path in known.items()
    }
    # A package's __init__ importing nothing of its own does not make its modules a cycle.
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node)
    assert cycles == [], "\n".join(cycles)


def test_no_production_module_is_over_500_lines():
    known = modules()
    long = {
        name: n
        for name, path in known.items()
        if "migrations" not in name
        and layer(name) not in ("testing", "import_testing")
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert long == {}, long


def test_no_part_but_the_roof_imports_hermes_site():
    known = modules()
    wrong = [
        f"{name} imports {target}"
        for name, path in known.items()
        if layer(name) != "site"
        for target in imports(path, known)
        if target.split(".")[0] == "hermes_site"
    ]
    assert wrong == [], wrong


def test_neither_the_engine_nor_recall_imports_the_other_or_the_agent():
    known = modules()
    wrong = [
        f"{name} imports {target}"
        for name, path in known.items()
        if name.split(".")[0] in ("compression", "search")
        for target in imports(path, known)
        if target.split(".")[0] == "agent"
        or {name.split(".")[0], target.split(".")[0]} == {"compression", "search"}
    ]
    assert wrong == [], wrong


def test_the_parts_table_of_the_architecture_doc_lists_every_package():
    table = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = {
        line.split("`")[1].rstrip("/") for line in table.splitlines() if line.startswith("| `")
    }
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} | {"hermes_plugin"}
    packages |= {f"compression/{p.parent.name}" for p in ROOT.glob("compression/*/__init__.py")}
    packages -= {"tests", "bench", "compression/management", "compression/migrations"}
    assert packages - listed == set(), "not in docs/architecture.md's table of parts"


def _store_writes(path: Path) -> list[int]:
    """Lines where ``path`` writes Session or Message rows: a queryset chain of
    ``Session.objects``/``Message.objects`` ending in a write, or ``.save()`` of a row."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        if method == "save":
            found.append(node.lineno)
            continue
        if method not in {"update", "create", "bulk_update", "bulk_create", "delete"}:
            continue
        receiver = node.func.value
        while isinstance(receiver, (ast.Call, ast.Attribute)):
            if (
                isinstance(receiver, ast.Attribute)
                and receiver.attr == "objects"
                and isinstance(receiver.value, ast.Name)
                and receiver.value.id in {"Session", "Message"}
            ):
                found.append(node.lineno)
                break
            receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
    return found


def test_only_the_store_writes_sessions_and_messages():
    """Compression, the agent and the importer write a session's or a message's row only
    through the store's services; the one exception is the compression claim (conditional
    updates of its own)."""
    assert _above_the_store(_store_writes) == []


def _store_reads(path: Path) -> list[int]:
    """Lines where ``path`` names ``Session.objects`` or ``Message.objects``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr == "objects"
        and isinstance(node.value, ast.Name)
        and node.value.id in {"Session", "Message"}
    ]


def test_the_engine_the_console_the_agent_and_the_importer_read_through_selectors():
    """Compression (its pages included), the agent and the importer query sessions and
    messages only through ``sessions_app.selectors``; the claim's conditional updates are the
    one exception."""
    assert _above_the_store(_store_reads) == []


def _above_the_store(find) -> list[str]:
    """``module:line`` for each place ``find`` finds in compression, the agent and the importer
    (their loopback servers, the demo and migrations aside), but in the claim."""
    allowed = {"compression.engine.claim"}
    return [
        f"{name}:{line}"
        for name, path in modules().items()
        if name.split(".")[0] in ("compression", "agent", "hermes_import")
        and layer(name) not in ("testing", "import_testing", "demo")
        and ".migrations" not in name
        and name not in allowed
        for line in find(path)
    ]
