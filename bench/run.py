"""make bench: the one table of every heavy step against its floor (bench_limits), or others.

Benchmarks print numbers; they never fail a build. Usage: bench/run.py [--quick] [NAME_FILTER ...]
- no filter: bench_limits only (issue 25's table: every step on every shape, its floor, the
  ratio and the goal); about 10 minutes on the shared two cores;
- `--quick`: the same on 20k-entry shapes, one run (BENCH_SIZES=20000 BENCH_RUNS=1);
- `all`: every bench/bench_*.py module's bench_* functions; any other word: those whose
  `module.function` name holds it (e.g. `bench_ui`, `bench_policies`);
- `bench_load`: `make serve` with a worker under 37 staff and 3 API importers, locust, 3 minutes
  (BENCH_LOAD_SECONDS for a shorter run; bench/bench_load.py).
`make bench BENCH_ARGS="--quick"` passes them through.
"""

import importlib
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
os.environ.setdefault("DEBUG", "1")  # development settings (DEBUG is off by default)


def main(filters):
    if "--quick" in filters:
        filters = [f for f in filters if f != "--quick"]
        os.environ.setdefault("BENCH_SIZES", "20000")
        os.environ.setdefault("BENCH_RUNS", "1")
    if not filters:
        filters = ["bench_limits.bench_limits"]
    elif "all" in filters:
        filters = []
    print(
        f"# refunds_admin benchmarks, {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores"
    )
    print(f"# DATABASE_URL={'set' if os.environ.get('DATABASE_URL') else 'unset (SQLite)'}, "
          f"REDIS_URL={'set' if os.environ.get('REDIS_URL') else 'unset'}")  # fmt: skip
    for path in sorted(HERE.glob("bench_*.py")):
        module = importlib.import_module(path.stem)
        for name in sorted(n for n in dir(module) if n.startswith("bench_")):
            if filters and not any(f in f"{path.stem}.{name}" for f in filters):
                continue
            print(f"\n== {path.stem}.{name}", flush=True)
            try:
                getattr(module, name)()
            except Exception as exc:  # a benchmark that breaks says so and the rest still run
                print(f"   FAILED: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
