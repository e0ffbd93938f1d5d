"""Coverage floors, checked after the suite ran under coverage (`make test`).

The pure engine, refunds_admin/payouts/, must stay at least 95% covered as a whole, and every
services.py (each file on its own: that is where the writes live) at least 90%. Prints the
figures and exits 1 when one is below its floor, naming it. A services.py that the run never
imported counts as 0%.

    python tools/coverage_floors.py [--data-file .coverage]
"""

import argparse
import sys
from pathlib import Path

import coverage

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "refunds_admin"
PAYOUTS_FLOOR = 95.0
SERVICES_FLOOR = 90.0


def _counts(cov, path):
    """(statements, missed) of one file; a file coverage never saw has all its lines missed."""
    _, statements, _, missing, _ = cov.analysis2(str(path))
    return len(statements), len(missing)


def _percent(statements, missed):
    return 100.0 if statements == 0 else 100.0 * (statements - missed) / statements


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-file", default=str(ROOT / ".coverage"))
    args = parser.parse_args(argv)
    if not Path(args.data_file).exists():
        print(f"coverage floors: no coverage data at {args.data_file}; run the suite with --cov")
        return 1
    cov = coverage.Coverage(data_file=args.data_file, config_file=str(ROOT / "pyproject.toml"))
    cov.load()

    rows = []  # (what, percent, floor)
    payouts = [_counts(cov, p) for p in sorted((APP / "payouts").rglob("*.py"))]
    statements, missed = sum(s for s, _ in payouts), sum(m for _, m in payouts)
    rows.append(("refunds_admin/payouts/ (all files)", _percent(statements, missed), PAYOUTS_FLOOR))
    for path in sorted(APP.rglob("services.py")):
        rows.append((str(path.relative_to(ROOT)), _percent(*_counts(cov, path)), SERVICES_FLOOR))

    below = [(what, pct, floor) for what, pct, floor in rows if pct < floor]
    print("coverage floors")
    for what, pct, floor in rows:
        mark = "BELOW" if pct < floor else "ok"
        print(f"  {pct:6.2f}%  (floor {floor:.0f}%)  {mark:5}  {what}")
    if below:
        names = ", ".join(f"{what} {pct:.2f}% < {floor:.0f}%" for what, pct, floor in below)
        print(f"coverage floors: FAILED: {names}")
        return 1
    print("coverage floors: all met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
