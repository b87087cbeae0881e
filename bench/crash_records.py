"""Kill lab gradings and backups at random moments (SIGKILL) and count what survives.

  python bench/crash_records.py [--kills 100]

1. A child records passing/failing gradings in a loop (the real `Recorder` on a real file);
   it is killed at a random moment, KILLS times. After each kill the file must pass
   integrity_check and every level with a passing attempt must have its lab card.
2. A child makes rolling backups in a loop and is killed at random, KILLS times; after each
   kill one backup runs. No `.partial` may be left and every backup must pass integrity_check.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scheduler.backup import make_rolling_backup, rolling_backups, stale_partials  # noqa: E402
from scheduler.store import Store  # noqa: E402

GRADER = """
import itertools, sys
from pathlib import Path
from types import SimpleNamespace as N
from trainer.core.attempts import Recorder
from scheduler.store import Store

db = Path(sys.argv[1])
store = Store.open(db, auto_backup=False)
recorder = Recorder(store)
print("started", flush=True)
for i in itertools.count():
    passed = i % 3 != 0
    case = N(id="c1", required=True)
    levels = [N(level=lv, passed=passed, metrics=lambda: {}, duration_s=0.1,
                results=[N(case=case, passed=passed, kind="correctness", metrics=None)])
              for lv in (1 + i % 4, 5 + i % 4)]
    ex = f"ex{i % 50}"
    ok, why = recorder.record(N(exercise=ex, device="cpu", seed=i, levels=levels,
                                attempt_metrics={}))
    assert ok, why
"""

BACKUPS = """
import sys
from pathlib import Path
from scheduler.backup import make_rolling_backup
print("started", flush=True)
while True:
    make_rolling_backup(Path(sys.argv[1]), keep=3)
"""


def _kill_at_random(code: str, db: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(db)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    time.sleep(random.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _raw(db: Path) -> tuple[str, int, int, int]:
    """(integrity_check, attempts, passed levels, passed levels without a card)."""
    conn = sqlite3.connect(db)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        attempts = conn.execute("SELECT count(*) FROM lab_attempts").fetchone()[0]
        passed = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT exercise, level FROM lab_attempts "
            "WHERE passed)").fetchone()[0]
        orphans = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT exercise, level FROM lab_attempts a WHERE "
            "passed AND NOT EXISTS (SELECT 1 FROM lab_cards c WHERE c.exercise = a.exercise "
            "AND c.level = a.level))").fetchone()[0]
    finally:
        conn.close()
    return str(check), int(attempts), int(passed), int(orphans)


def _backup_ok(path: Path) -> bool:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        return bool(conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "dojo.sqlite3"
        Store.open(db).close()
        bad = orphans_seen = 0
        for _ in range(args.kills):
            _kill_at_random(GRADER, db)
            check, attempts, passed, orphans = _raw(db)
            bad += check != "ok"
            orphans_seen += orphans
        print(f"gradings: {args.kills} kills, {attempts} attempts stored, {passed} passed "
              f"levels, {orphans_seen} passed levels without a card (target 0), "
              f"{bad} failed integrity checks (target 0)")

        with Store.open(db) as store:
            store.sync_cards([(f"q{i}", "t") for i in range(2000)])
        partials = broken = 0
        for _ in range(args.kills):
            _kill_at_random(BACKUPS, db)
            make_rolling_backup(db, keep=3)
            partials += len(stale_partials(db))
            broken += sum(not _backup_ok(p) for p in rolling_backups(db))
        print(f"backups: {args.kills} kills, {partials} partial copies left after the next "
              f"backup (target 0), {broken} backups failing integrity_check (target 0)")


if __name__ == "__main__":
    main()
