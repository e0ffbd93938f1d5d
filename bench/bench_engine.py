"""compute_payouts as a whole command on 100k and 250k active entries (issue 2 goals: 1.0 s, 2.6 s)."""

import subprocess
import sys
import time
from pathlib import Path

from gen_snapshot import write_snapshot

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
RUNS = 3


def _time_command(path):
    timings = []
    for _ in range(RUNS):
        start = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "manage.py", "compute_payouts", str(path)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        timings.append(time.perf_counter() - start)
        if res.returncode:
            raise RuntimeError(res.stderr.decode()[-300:])
    return min(timings), sorted(timings)[len(timings) // 2]


def _bench(active, eliminated, goal, **kw):
    OUT.mkdir(exist_ok=True)
    path = OUT / f"snapshot-{active}-{'itm' if kw.get('in_the_money') else 'nitm'}.json"
    if not path.exists():
        write_snapshot(path, active, eliminated, **kw)
    best, median = _time_command(path)
    size = path.stat().st_size / 1e6
    verdict = "ok" if best <= goal else "OVER GOAL"
    print(f"   {active:>7,} active + {eliminated:,} eliminated ({size:.0f} MB): "
          f"best {best:.2f} s, median {median:.2f} s of {RUNS}; goal {goal} s: {verdict}")  # fmt: skip


def bench_compute_payouts_100k():
    _bench(100_000, 20_000, 1.0)
    _bench(100_000, 20_000, 1.0, in_the_money=True)


def bench_compute_payouts_250k():
    _bench(250_000, 50_000, 2.6)
