"""`make bench`: runs every `bench_<thing>()` of every `bench/bench_<area>.py` module, in order.

Each function prints its own figures. `python bench/run.py workflow` runs only the modules whose
name contains "workflow".
"""

import importlib
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def main(argv):
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
    import django

    django.setup()
    wanted = argv[1:]
    for path in sorted(HERE.glob("bench_*.py")):
        if wanted and not any(w in path.stem for w in wanted):
            continue
        module = importlib.import_module(path.stem)
        for name in sorted(n for n in dir(module) if n.startswith("bench_")):
            function = getattr(module, name)
            if callable(function):
                print(f"== {path.stem}.{name}", flush=True)
                started = time.perf_counter()
                function()
                print(f"   ({time.perf_counter() - started:.1f} s in all)", flush=True)


if __name__ == "__main__":
    main(sys.argv)
