"""Layers run one way (design.md): the payout engine is pure Python, and no app imports a higher one.

The engine is what an auditor replays years later and what `compute_payouts` runs without Django;
an import of Django or of an app module would make it depend on the database it must not need.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "refunds_admin"
ENGINE = PACKAGE / "payouts"
# Lowest first: an app may import the ones before it, never the ones after it. audit and
# accounts sit below them all and import none of them (the pure engine excepted: audit's display
# formats amounts and names rules with it; it marks sign-ins set by someone else in accounts). ops (health, heartbeats, request logs) reads only the
# audit's request context and the job toolkit. db (the database's fast paths) pauses the
# collector with the engine's paused_gc and knows no app.
LAYERS = [
    "payouts",
    "policies",
    "tournaments",
    "incidents",
    "outages",
    "proposals",
    "ledger",
    "notifications",
    "reports",
    "web",
]
SAME_LAYER = {"notifications": "reports", "reports": "notifications"}
# jobs (the job toolkit: locks, claims, heartbeats, queueing by name) imports no app: the apps
# describe their jobs to it. ops reports the stalled jobs it lists.
BELOW_ALL = {
    "audit": {"payouts", "accounts"},
    "accounts": set(),
    "jobs": set(),
    "ops": {"audit", "jobs"},
    "db": {"payouts"},
}


def _imported_modules(path):
    """Every module a file imports, at any depth (function-level imports count too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's own package
                base = package.rsplit(".", node.level)[0]
                yield f"{base}.{node.module}" if node.module else base
            else:
                yield node.module


def _sources(folder):
    return [p for p in sorted(folder.rglob("*.py")) if "migrations" not in p.parts]


def test_it_keeps_the_engine_free_of_django_and_the_apps_when_imported():
    code = (
        "import json, sys\n"
        "import refunds_admin.payouts, refunds_admin.payouts.cli\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'django'"
        " or m.startswith('django.') or (m.startswith('refunds_admin.')"
        " and not m.startswith('refunds_admin.payouts')))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},  # no DJANGO_SETTINGS_MODULE: nothing may need it
    )
    assert json.loads(result.stdout) == []


def test_it_finds_no_django_or_app_import_in_the_engine_source():
    offending = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in _sources(ENGINE)
        for module in _imported_modules(path)
        if module.split(".")[0] == "django"
        or (module.startswith("refunds_admin") and not module.startswith("refunds_admin.payouts"))
    ]
    assert offending == []


def test_it_scans_the_engine_for_real():
    # The scan above must be able to fail: it sees the engine's own imports.
    modules = {m for p in _sources(ENGINE) for m in _imported_modules(p)}
    assert "refunds_admin.payouts.money" in modules and "orjson" in modules


@pytest.mark.parametrize(
    "app",
    [app for app in [*LAYERS, *BELOW_ALL] if (PACKAGE / app).is_dir()],
)
def test_it_never_imports_a_higher_layer(app):
    folder = PACKAGE / app
    if app in BELOW_ALL:
        forbidden = [a for a in [*LAYERS, *BELOW_ALL] if a != app and a not in BELOW_ALL[app]]
    else:
        forbidden = [a for a in LAYERS[LAYERS.index(app) + 1 :] if a != SAME_LAYER.get(app)]
    offending = [
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in _sources(folder)
        for module in _imported_modules(path)
        if module.startswith("refunds_admin.") and module.split(".")[1] in forbidden
    ]
    assert offending == []
