"""Issue 23, the staff's day: what a newcomer trial found on the pages, each with the behaviour a
person relies on (the browser journeys check the same things in Chromium)."""

import re
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[2]


# --- Set-up papercuts ---------------------------------------------------------------------


@pytest.mark.django_db
def test_the_demo_says_how_to_print_a_code_from_the_virtualenv(capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    assert "manager: key " in out
    assert ".venv/bin/python manage.py totp_code manager" in out
    assert re.search(r"(?<!/)\bpython manage\.py totp_code", out) is None
    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/python manage.py totp_code manager" in readme
    assert re.search(r"`python manage\.py totp_code", readme) is None


def _make_run_dry(*args):
    return subprocess.run(
        ["make", "-n", "--no-print-directory", "run", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    ).stdout


def test_make_run_links_e_mails_to_its_own_port_and_writes_them_to_files():
    out = _make_run_dry("PORT=8123")
    assert "runserver 127.0.0.1:8123" in out
    assert "Links in them point to http://127.0.0.1:8123" in out
    assert "written as files to " + str(ROOT / "mail") in out


@pytest.mark.django_db
def test_recent_activity_leaves_out_the_authenticators_confirmed(client, world, manager):
    # The managers' authenticators were confirmed before the work began (tests/conftest.py).
    client.force_login(manager)
    page = client.get(reverse("dashboard")).content.decode()
    recent = page[page.index('id="recent-activity"') :]
    assert "confirmed an authenticator app" not in recent
    assert "submitted" in recent  # the refunds work is there
    # ... with the year: "2026-11-29 21:45 UTC", not "11-29 21:45".
    assert re.search(r">2026-11-29 \d\d:\d\d UTC<", recent)
    # The full history on the audit page still has it.
    audit = client.get(reverse("audit")).content.decode()
    assert "confirmed an authenticator app" in audit
