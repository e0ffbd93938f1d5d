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


# --- Major 3: the prize table as imported ---------------------------------------------------


def _major_with_ranges(external_id="UP-RANGES-1"):
    from tests.factories import sunday_major_doc

    doc = sunday_major_doc(external_id, entries=400, active=60)
    doc["tournament"]["prizes"] = [
        *doc["tournament"]["prizes"],
        {"places": [10, 12], "amount": "200.00"},
        {"places": [13, 40], "amount": "150.00"},
        {"place": 41, "amount": "120.00", "non_cash": True, "description": "Main event ticket"},
    ]
    return doc


@pytest.mark.django_db
def test_the_tournament_page_shows_prize_ranges_as_imported(client, support):
    from tests.factories import import_doc

    snapshot = import_doc(support, _major_with_ranges())
    client.force_login(support)
    page = client.get(reverse("tournament_detail", args=[snapshot.tournament_id])).content.decode()
    table = page[
        page.index('id="prize-ranges"') : page.index("</tbody>", page.index("prize-ranges"))
    ]
    assert table.count("<tr>") == 12  # 9 single places, 10–12, 13–40, 41
    assert "<td>10–12</td>" in table and "<td>13–40</td>" in table
    assert "<td>41</td>" in table and "Main event ticket" in table
    assert "USD 150.00" in table


# --- Support / auditor: the stored snapshot document -----------------------------------------


@pytest.mark.django_db
def test_the_stored_snapshot_downloads_byte_for_byte_from_its_page(client, support, auditor):
    from tests.factories import dumps, import_doc

    doc = _major_with_ranges("UP-DOC-1")
    snapshot = import_doc(support, doc)
    client.force_login(auditor)
    page = client.get(reverse("tournament_detail", args=[snapshot.tournament_id])).content.decode()
    url = reverse("snapshot_document", args=[snapshot.tournament_id, 1])
    assert f'href="{url}"' in page
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="UP-DOC-1-v1.json"'
    assert response.content == dumps(doc).encode()
    import hashlib

    assert hashlib.sha256(response.content).hexdigest() == response["X-Content-SHA256"]
    assert (
        client.get(reverse("snapshot_document", args=[snapshot.tournament_id, 2])).status_code
        == 404
    )
