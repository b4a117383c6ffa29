"""The README and the docs: every link stays inside the repository and finds the file and section
it names, and the README's Operations part points at each operator tool's section."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<(https?://[^>]+)>")
LOOPBACK = re.compile(r"https?://(127\.0\.0\.1|localhost|\[::1\])[:/]")


def anchors(markdown: Path) -> set[str]:
    """GitHub's ids for a file's headings (lower case, punctuation dropped, spaces as hyphens),
    code blocks skipped."""
    found, fenced = set(), False
    for line in markdown.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def links(markdown: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.S)
    return [a or b for a, b in LINK.findall(text)]


def test_every_link_in_the_readme_and_docs_stays_in_the_repository_and_finds_its_section():
    broken = []
    for document in DOCUMENTS:
        for target in links(document):
            if re.match(r"[a-z]+:", target):
                if not LOOPBACK.match(target):  # the service on this machine is not outside
                    broken.append(f"{document.name}: {target} leaves the repository")
                continue
            path, _, anchor = target.partition("#")
            file = (document.parent / path).resolve() if path else document
            if not file.is_relative_to(ROOT) or not file.exists():
                broken.append(f"{document.name}: {target} names no file of the repository")
            elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
                broken.append(f"{document.name}: {target} names no section")
    assert broken == []


def test_the_readme_s_operations_part_points_at_each_operator_tool_s_section():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    operations = readme.split("\n## Operations\n", 1)[1].split("\n## ", 1)[0]
    expected = {
        "erasure": ["manage.py erase --session", "--external-id X --channel C"],
        "keys": ["manage.py create_channel NAME --scopes", "--expires-in", "rotation in the admin"],
        "metrics": ["GET /metrics", "loopback", "server.metrics_token"],
        "health": ["/healthz", "/readyz"],
        "logs": ["server.log_format: json"],
        "audit-log": ["Audit log"],
    }
    sections = anchors(ROOT / "docs" / "operations.md")
    for anchor, words in expected.items():
        assert anchor in sections
        (line,) = [x for x in operations.split("\n- ") if f"docs/operations.md#{anchor})" in x]
        for word in words:
            assert word in line, (anchor, word)
    overview = readme.split("\n## ", 1)[0]
    status = readme.split("\n## Status\n", 1)[1].split("\n## ", 1)[0]
    for part in (overview, status):
        for word in ("metrics", "JSON logs", "erasure", "audit log", "keys"):
            assert word in part.replace("Prometheus metrics", "metrics"), word
