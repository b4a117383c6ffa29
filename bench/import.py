"""import_hermes at real sizes: a generated Hermes state.db in Hermes's own schema, imported into
a fresh embedded store, then imported again with nothing new.

    .venv/bin/python bench/import.py [--sizes 100000 1000000] [--session 500]

The store is written the way Hermes writes it (hermes_import/testing/home.py, schema 31):
sessions of about ``--session`` messages -- English turns, Chinese turns, tool calls with long
output -- compacted in place every ~150 messages (both Hermes builds), every tenth conversation
rotated into a chain of links, an occasional /undo. Each import runs as ``manage.py
import_hermes`` in its own process, so its peak memory is its own. The baseline, measured in the
same run, is the floor any importer pays: reading and decoding every row of the store once.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENGLISH = "the deploy failed because the migration {n} lacked a default value for column".split()
CHINESE = "部署 失败 因为 数据库 迁移 缺少 默认值 我们 需要 回滚 然后 重新 运行".split()


def generate(path: Path, messages: int, per_session: int) -> dict[str, int]:
    from hermes_import.testing.home import HermesHome

    home = HermesHome(path, 31)
    home.conn.execute("BEGIN")
    written = sessions = chains = 0
    while written < messages:
        sid = home.session(title=f"conversation {sessions}")
        sessions += 1
        rotate = sessions % 10 == 0
        in_session = 0
        target = min(per_session, messages - written)
        while in_session < target:
            n = written + in_session
            kind = n % 5
            if kind in (0, 1):
                words = " ".join(ENGLISH[(n + i) % len(ENGLISH)] for i in range(12))
                home.append(sid, "user", f"{words} n{n}")
                home.append(sid, "assistant", f"answer {n}: {words}")
                in_session += 2
            elif kind == 2:
                text = "".join(CHINESE[(n + i) % len(CHINESE)] for i in range(10))
                home.append(sid, "user", f"{text} 编号{n}")
                home.append(sid, "assistant", f"好的 {text}")
                in_session += 2
            else:
                call = f"call_{n}"
                home.append(
                    sid,
                    "assistant",
                    None,
                    tool_calls=[
                        {
                            "id": call,
                            "type": "function",
                            "function": {"name": "terminal", "arguments": f'{{"cmd": "ls {n}"}}'},
                        }
                    ],
                )
                output = "\n".join(f"drwxr-xr-x file_{n}_{i}.py" for i in range(40))
                home.append(sid, "tool", output, tool_call_id=call, tool_name="terminal")
                in_session += 2
            if in_session % 150 < 2 and in_session > 20:
                if rotate and in_session % 300 < 2:
                    sid = home.rotate(sid, head=3, tail=6)
                    chains += 1
                else:
                    home.compact(sid, head=3, tail=6, tail_count=bool(in_session % 4))
            if n % 997 == 0:
                users = [r for r in home.active_rows(sid) if r["role"] == "user"]
                if users:
                    home.rewind(sid, users[-1]["id"])
        written += in_session
    home.conn.execute("COMMIT")
    total = home.conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    home.close()
    return {"messages": total, "sessions": sessions, "rotations": chains}


def read_all(db: Path) -> int:
    """The baseline: every row read and decoded once through the importer's reader."""
    from hermes_import.format import decode_content
    from hermes_import.reader import HermesStore

    store = HermesStore(db)
    n = 0
    sessions = list(store.sessions())
    for start in range(0, len(sessions), 200):
        for row in store.messages(sessions[start : start + 200]):
            decode_content(row["content"])
            n += 1
    store.close()
    return n


def run_import(home: Path, data: Path) -> tuple[float, float, str]:
    """One ``manage.py import_hermes`` in its own process: seconds, its own peak RSS (MiB)."""
    env = {**os.environ, "HERMES_CONFIG": str(data / "hermes.yaml")}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "manage.py", "import_hermes", str(home)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    output = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"import_hermes failed:\n{output}")
    return seconds, usage.ru_maxrss / 1024, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--session", type=int, default=500)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="hermes-import-bench-") as tmp:
            tmp_path = Path(tmp)
            home, data = tmp_path / "home", tmp_path / "service"
            data.mkdir()
            (data / "hermes.yaml").write_text(f"server:\n  data_dir: {data}\n", encoding="utf-8")
            started = time.perf_counter()
            made = generate(home, size, args.session)
            generated = time.perf_counter() - started
            env = {**os.environ, "HERMES_CONFIG": str(data / "hermes.yaml")}
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
            )
            started = time.perf_counter()
            read = read_all(home / "state.db")
            baseline = time.perf_counter() - started
            first, first_peak, report = run_import(home, data)
            # Every copy the generator wrote is matched with its original.
            assert "Copies not matched: 0" in report, report[:2_000]
            again, _again_peak, report_again = run_import(home, data)
            assert "0 new, 0 updated" in report_again, report_again
            rows.append((size, made, generated, read, baseline, first, first_peak, again))
            print(report.splitlines()[1], file=sys.stderr)
    print(f"{'measure':52}|{'value':>16}")
    print("-" * 52 + "|" + "-" * 16)
    for size, made, generated, read, baseline, first, peak, again in rows:
        label = f"{size:,}"
        print(f"{'messages in the Hermes store (' + label + ')':52}|{made['messages']:>16,}")
        print(f"{'  sessions / rotations':52}|{made['sessions']:>8,} / {made['rotations']:>5,}")
        print(f"{'  generating the store, s':52}|{generated:>16.1f}")
        print(f"{'  baseline: read and decode every row, s':52}|{baseline:>16.1f}")
        print(f"{'  import_hermes, first run, s':52}|{first:>16.1f}")
        print(f"{'  import vs baseline (x)':52}|{first / max(baseline, 1e-9):>16.1f}")
        print(f"{'  import, messages/s':52}|{made['messages'] / first:>16,.0f}")
        print(f"{'  import peak RSS (its own process), MiB':52}|{peak:>16.0f}")
        print(f"{'  re-run with nothing new, s':52}|{again:>16.1f}")
        assert read == made["messages"]


if __name__ == "__main__":
    main()
