"""bin/test and .ci/run, run in a sandbox with stubs for everything they call: the browser tests'
screenshots are kept per pass, a run starts without the last one's, and CI says where they are."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

if not shutil.which("bash"):
    pytest.skip("bin/test and .ci/run are bash scripts", allow_module_level=True)

# Stands in for .venv/bin/python: "pytest" takes a screenshot where the browser tests would.
FAKE_PYTHON = """#!/bin/sh
if [ "$1" = "-m" ]; then
  mkdir -p "$HERMES_TEST_ARTIFACTS/screenshots"
  touch "$HERMES_TEST_ARTIFACTS/screenshots/walk-1-search.png"
fi
exit 0
"""


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    return {**env, **extra}


def test_bin_test_keeps_each_pass_s_screenshots_in_its_own_folder_and_clears_the_last_run_s(
    tmp_path,
):
    _script(tmp_path / "bin" / "test", (ROOT / "bin" / "test").read_text())
    for stub in ("bin/bootstrap", "bin/peers", ".venv/bin/ruff", ".venv/bin/mypy"):
        _script(tmp_path / stub, "#!/bin/sh\nexit 0\n")
    _script(tmp_path / ".venv" / "bin" / "python", FAKE_PYTHON)
    artifacts = tmp_path / "var" / "test-artifacts"
    stale = [
        artifacts / "screenshots" / "old.png",
        artifacts / "sqlite" / "screenshots" / "old.png",
        artifacts / "postgresql" / "screenshots" / "old.png",
    ]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"old")

    run = subprocess.run(
        [str(tmp_path / "bin" / "test")], env=_env(), capture_output=True, text=True, timeout=60
    )

    assert run.returncode == 0, run.stderr
    assert not any(path.exists() for path in stale)
    assert (artifacts / "sqlite" / "screenshots" / "walk-1-search.png").exists()
    assert (artifacts / "postgresql" / "screenshots" / "walk-1-search.png").exists()
    assert not (artifacts / "screenshots").exists()


# Stands in for .venv/bin/python: each pass says which it is; the PostgreSQL pass fails.
PASSES_PYTHON = """#!/bin/sh
if [ "$1" = "-m" ]; then
  if [ -n "$HERMES_DATABASE_URL" ]; then echo "postgresql pass ran"; exit 5; fi
  echo "sqlite pass ran"
fi
exit 0
"""


def _sandbox(tmp_path: Path, python: str) -> None:
    _script(tmp_path / "bin" / "test", (ROOT / "bin" / "test").read_text())
    for stub in ("bin/bootstrap", "bin/peers", ".venv/bin/ruff", ".venv/bin/mypy"):
        _script(tmp_path / stub, "#!/bin/sh\nexit 0\n")
    _script(tmp_path / ".venv" / "bin" / "python", python)


def test_bin_test_runs_both_passes_and_fails_with_the_postgresql_pass_showing_its_output(
    tmp_path,
):
    _sandbox(tmp_path, PASSES_PYTHON)

    run = subprocess.run(
        [str(tmp_path / "bin" / "test")], env=_env(), capture_output=True, text=True, timeout=60
    )

    assert run.returncode == 5
    assert "sqlite pass ran" in run.stdout and "postgresql pass ran" in run.stdout
    assert "SQLite pass exit 0, PostgreSQL pass exit 5" in run.stderr


def test_bin_test_runs_the_passes_one_after_the_other_when_asked(tmp_path):
    _sandbox(tmp_path, PASSES_PYTHON)

    run = subprocess.run(
        [str(tmp_path / "bin" / "test")],
        env=_env(HERMES_TEST_SERIAL="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert run.returncode == 5
    assert run.stdout.index("sqlite pass ran") < run.stdout.index("postgresql pass ran")
    assert "alongside" not in run.stdout


def test_the_quick_lane_runs_one_sqlite_pass_without_the_marked_tests_or_the_peers(tmp_path):
    _script(tmp_path / "bin" / "test", (ROOT / "bin" / "test").read_text())
    calls = tmp_path / "calls"
    for stub in (
        "bin/bootstrap",
        "bin/peers",
        ".venv/bin/ruff",
        ".venv/bin/mypy",
        ".venv/bin/python",
    ):
        _script(tmp_path / stub, f'#!/bin/sh\necho "{stub} $*" >> {calls}\nexit 0\n')

    run = subprocess.run(
        [str(tmp_path / "bin" / "test"), "--quick", "-k", "api"],
        env=_env(HERMES_DATABASE_URL="postgres://elsewhere/db"),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert run.returncode == 0, run.stderr
    lines = calls.read_text().splitlines()
    assert not any(line.startswith("bin/peers") for line in lines)
    assert "bin/bootstrap " in lines and ".venv/bin/ruff format --check ." in lines
    assert ".venv/bin/mypy " in lines
    pytest_runs = [line for line in lines if line.startswith(".venv/bin/python -m pytest")]
    assert pytest_runs == [
        ".venv/bin/python -m pytest -m not browser and not peer and not postgres and not slow"
        " -k api"
    ]
    assert "PostgreSQL" not in run.stdout


@pytest.mark.parametrize("status", [0, 3])
def test_ci_says_last_where_the_screenshots_are_and_keeps_the_tests_exit_status(tmp_path, status):
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == "./bin/test"  # the README's command stays last
    _script(tmp_path / ".ci" / "run", ci)
    shots = tmp_path / "var" / "test-artifacts" / "sqlite" / "screenshots"
    _script(
        tmp_path / "bin" / "test",
        f"#!/bin/sh\nmkdir -p {shots}\ntouch {shots}/a.png {shots}/b.png\nexit {status}\n",
    )
    tools = tmp_path / "tools"
    fonts = "echo 'WenQuanYi Zen Hei (wqy)'"
    for name, body in {"chromium": "", "npm": "", "fc-list": fonts}.items():
        _script(tools / name, f"#!/bin/sh\n{body}\nexit 0\n")

    run = subprocess.run(
        [str(tmp_path / ".ci" / "run")],
        env=_env(PATH=f"{tools}:{os.environ['PATH']}"),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert run.returncode == status
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("== screenshots (test artifacts): ")
    assert f"{tmp_path}/var/test-artifacts/sqlite/screenshots/" in last
    assert f"{tmp_path}/var/test-artifacts/postgresql/screenshots/" in last
    assert "(2 files)" in last
