"""make bench: run every bench/bench_*.py module's bench_* functions and print their figures.

Benchmarks print numbers; they never fail a build. Usage: bench/run.py [NAME_FILTER ...]
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
