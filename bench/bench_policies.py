"""Issue 19's engine rows: compute_payouts of a progressive knockout under roll-forward-50-50,
next to the default policy on a plain snapshot of the same size, in the same run.

| row | what | goal |
|---|---|---|
| plain, default policy | `compute_payouts` of make_snapshot(100k active, 20k eliminated) | - |
| PKO, roll-forward-50-50 | the same tournament as a progressive knockout ($100 + $50 KO + $9, a bounty on every active head), rebuys and add-ons on a third of the entries, `paid_with` on another third (tickets, tournament money and cash), a guarantee | within 15% of the plain figure |

Both are whole commands (a process each), run in turn BENCH_RUNS times (default 3). Each is
printed as wall time and CPU time (user + system: the machine is shared, and CPU time swings
less than wall time), and as a ratio to its own floor (stdlib json.load + json.dump of the same
file, a process: the PKO document is half as large again, with 50k more objects to read). The
last rows divide the PKO figures by the plain ones of the same run.
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gen_snapshot import make_knockout_snapshot, make_snapshot

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
ACTIVE = int(os.environ.get("BENCH_POLICY_ACTIVE", "100000"))
GOAL = 1.15
_FLOOR = "import json, sys; json.dump(json.load(open(sys.argv[1])), open('/dev/null', 'w'))"


def _file(kind):
    OUT.mkdir(exist_ok=True)
    path = OUT / f"policies-{kind}-{ACTIVE}.json"
    if not path.exists():
        make = make_snapshot if kind == "plain" else make_knockout_snapshot
        with open(path, "w") as fh:
            json.dump(make(ACTIVE, ACTIVE // 5), fh)
    return path


def _process(args):
    """Wall time and CPU time (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(proc.stderr.decode()[-500:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def bench_policies():
    kinds = ("plain", "pko")
    paths = {kind: _file(kind) for kind in kinds}
    figures = {kind: {"wall": [], "cpu": [], "floor_wall": [], "floor_cpu": []} for kind in kinds}
    for _ in range(RUNS):
        for kind in kinds:  # in turn, so that each run's figures share the machine's mood
            floor_wall, floor_cpu = _process([sys.executable, "-c", _FLOOR, str(paths[kind])])
            wall, cpu = _process([sys.executable, "manage.py", "compute_payouts", str(paths[kind])])
            f = figures[kind]
            f["wall"].append(wall)
            f["cpu"].append(cpu)
            f["floor_wall"].append(floor_wall)
            f["floor_cpu"].append(floor_cpu)

    def mm(values):
        return f"{min(values):.2f} / {statistics.median(values):.2f}"

    print(f"   {RUNS} runs each, {ACTIVE:,} active entries; min / median")
    head = (
        f"   {'compute_payouts':<44} {'MB':>4}  {'wall s':>12}  {'cpu s':>12}  "
        f"{'wall / floor':>12}  {'cpu / floor':>12}"
    )
    print(head)
    print("   " + "-" * (len(head) - 3))
    labels = {
        "plain": "plain snapshot, default policy",
        "pko": "PKO + rebuys + paid_with, roll-forward-50-50",
    }
    for kind in kinds:
        f = figures[kind]
        size = paths[kind].stat().st_size / 1e6
        wall_ratio = [w / fl for w, fl in zip(f["wall"], f["floor_wall"], strict=True)]
        cpu_ratio = [c / fl for c, fl in zip(f["cpu"], f["floor_cpu"], strict=True)]
        f["wall_ratio"], f["cpu_ratio"] = wall_ratio, cpu_ratio
        print(
            f"   {labels[kind]:<44} {size:>4.0f}  {mm(f['wall']):>12}  {mm(f['cpu']):>12}  "
            f"{mm(wall_ratio):>12}  {mm(cpu_ratio):>12}"
        )
    plain, pko = figures["plain"], figures["pko"]
    for what, key in (
        ("wall time", "wall"),
        ("CPU time", "cpu"),
        ("wall / floor", "wall_ratio"),
        ("CPU / floor", "cpu_ratio"),
    ):
        ratios = [k / p for k, p in zip(pko[key], plain[key], strict=True)]
        median = statistics.median(ratios)
        verdict = "ok" if median <= GOAL else ("ok at best" if min(ratios) <= GOAL else "OVER")
        print(f"   PKO / plain, {what:<31} {mm(ratios):>12}  <= {GOAL}x {verdict}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    bench_policies()
