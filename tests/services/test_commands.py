"""Management commands: import_snapshot, export_snapshot, load_demo (replay_proposal and
create_api_client are tested with proposals and the API)."""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from refunds_admin.incidents.models import Incident
from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.tournaments.models import Snapshot, Tournament

EXAMPLES = Path(__file__).parent.parent / "data" / "examples"
pytestmark = pytest.mark.django_db


def test_it_imports_and_exports_a_file_byte_for_byte(tmp_path, capsys):
    source = EXAMPLES / "06-non-cash-prize.scenario.json"
    call_command("import_snapshot", str(source))
    assert "Imported UP-EX-6" in capsys.readouterr().out
    assert Snapshot.objects.get().source == "cli"
    exported = tmp_path / "out.json"
    call_command("export_snapshot", "UP-EX-6", output=str(exported))
    assert exported.read_bytes() == source.read_bytes()
    call_command("export_snapshot", "UP-EX-6")
    assert capsys.readouterr().out == source.read_text(encoding="utf-8")


def test_it_refuses_a_bad_file_with_the_problems_and_imports_nothing():
    with pytest.raises(CommandError) as refused:
        call_command("import_snapshot", str(EXAMPLES / "09-refused-chips-mismatch.scenario.json"))
    assert "chips_in_play" in str(refused.value)
    assert Tournament.objects.count() == 0


def test_it_imports_as_a_named_user_only_with_a_role(auditor, support):
    path = str(EXAMPLES / "03-early-failure-full-refund.scenario.json")
    with pytest.raises(CommandError, match="may not import"):
        call_command("import_snapshot", path, user=auditor.username)
    call_command("import_snapshot", path, user=support.username)
    assert Snapshot.objects.get().imported_by == support


def test_demo_commands_refuse_when_debug_is_off(manager, settings):
    """Production (DEBUG off): no demo users with printed passwords, no second factor printed."""
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG is off"):
        call_command("load_demo")
    assert not get_user_model().objects.filter(username="admin").exists()
    with pytest.raises(CommandError, match="DEBUG is off"):
        call_command("totp_code", manager.username)


def test_it_loads_the_demo_once_and_prints_working_logins(capsys, settings):
    settings.DEBUG = True  # as `make run` runs it
    call_command("load_demo")
    out = capsys.readouterr().out
    for username, password in [
        ("support", "support-demo-pass"),
        ("manager", "manager-demo-pass"),
        ("manager2", "manager2-demo-pass"),
        ("auditor", "auditor-demo-pass"),
        ("admin", "admin-demo-pass"),
    ]:
        assert f"{username} / {password}" in out
        assert get_user_model().objects.get(username=username).check_password(password)
    # Managers and the superuser have an authenticator, and the command prints a working code.
    from refunds_admin.accounts import mfa

    for username in ("manager", "manager2", "admin"):
        user = get_user_model().objects.get(username=username)
        device = mfa.confirmed_device(user)
        assert f"{username}: key {mfa.secret(device)}" in out
        call_command("totp_code", username)
        code = capsys.readouterr().out.strip()
        assert mfa.verify_code(user, code) == device
    assert mfa.confirmed_device(get_user_model().objects.get(username="support")) is None
    assert Incident.objects.get(status="open").tournament.external_id == "UP-EX-2"
    cancelled = Incident.objects.get(status="cancelled")
    assert PayoutProposal.objects.get(incident=cancelled).status == "draft"
    counts = (Tournament.objects.count(), Snapshot.objects.count(), PayoutProposal.objects.count())

    call_command("load_demo")  # idempotent
    assert "already there" in capsys.readouterr().out
    assert counts == (
        Tournament.objects.count(),
        Snapshot.objects.count(),
        PayoutProposal.objects.count(),
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_names_a_statement_timeout_in_one_line_and_saves_nothing():
    """The database cancels the import's statement (statement_timeout): the operator reads one
    line naming the cause, not a traceback, and the tournament is not half imported."""
    import os
    import subprocess
    import sys

    import psycopg

    from tests.support.posting_support import worker_database_url

    url = worker_database_url()
    root = Path(__file__).resolve().parents[2]
    # Another session holds the snapshots table, so the import's write waits until the
    # database's statement timeout (half a second, this process only) cancels it.
    with psycopg.connect(url.replace("postgres://", "postgresql://")) as other:
        other.execute(f"LOCK TABLE {Snapshot._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "import_snapshot",
                str(EXAMPLES / "06-non-cash-prize.scenario.json"),
            ],
            cwd=root,
            env={**os.environ, "DATABASE_URL": url, "PGOPTIONS": "-c statement_timeout=500"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        other.rollback()
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "statement timeout" in lines[0] and "nothing was saved" in lines[0]
    assert not Tournament.objects.filter(external_id="UP-EX-6").exists()
