"""End-to-end journeys in a real Chromium on a live server.

Support imports a snapshot, records an incident (previewing the rule), prepares and submits;
a manager approves with their password and a code from their authenticator; the posting job runs and the progress bar reaches
100%; an auditor finds the incident, replays it and exports it; a bad CSV saves nothing; a
manager cannot approve their own proposal.
"""

import os
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from refunds_admin.proposals.models import PayoutProposal
from refunds_admin.tournaments.models import Tournament
from tests.support.factories import totp_code

from .conftest import shot, shot_of, snapshot_file

pytestmark = pytest.mark.browser


def _start_worker_if_needed(request):
    """With REDIS_URL the approval queues a task on Redis: a real worker must post it. Without,
    the task runs in-process when the approval commits."""
    if os.environ.get("REDIS_URL"):
        request.getfixturevalue("celery_worker_process").start()


def test_it_takes_a_tournament_from_snapshot_to_posted_refunds(
    open_as, support, manager, other_manager, tmp_path, request, settings
):
    # Support imports the snapshot file.
    page = open_as(support)
    page.click("nav >> text=Tournaments")
    page.click("text=Import a snapshot")
    page.set_input_files("#id_file", str(snapshot_file(tmp_path)))
    page.click("button:has-text('Import JSON')")
    page.wait_for_selector("text=Imported UP-2026-BROWSER-1")
    assert page.locator("#entries tbody tr").count() == 100
    page.fill("#entry-q", "shark0007")
    # A locator wait, not wait_for_function: Playwright evaluates its string with eval(), which
    # the Content-Security-Policy refuses (and the CSP watch would report).
    expect(page.locator("#entries tbody tr")).to_have_count(1)
    shot(page, "tournament")

    # Support records the incident; the rule preview follows the typed time.
    page.click("text=Record an incident")
    failed_at = timezone.now().replace(microsecond=0) - timedelta(minutes=40)
    page.fill("#id_failed_at", failed_at.strftime("%Y-%m-%dT%H:%M:%S"))
    page.wait_for_selector("#rule-preview >> text=Rule 2: not yet in the money")
    assert "after start" in page.inner_text("#rule-preview")
    starts_soon = (failed_at - timedelta(minutes=70)).strftime("%Y-%m-%dT%H:%M:%S")
    page.fill("#id_failed_at", starts_soon)  # 10 minutes after the start: rule 1
    page.wait_for_selector("#rule-preview >> text=Rule 1: full refund")
    page.fill("#id_failed_at", failed_at.strftime("%Y-%m-%dT%H:%M:%S"))
    page.wait_for_selector("#rule-preview >> text=Rule 2")
    page.select_option("#id_cause", "server_crash")
    page.fill("#id_description", "Game server 3 crashed at level 14; restarts failed.")
    shot(page, "incident-form")
    page.click("button:has-text('Record incident')")
    page.wait_for_selector("text=recorded")

    # The window has passed: support cancels, prepares and submits.
    page.click("button:has-text('Cancel the tournament')")
    page.wait_for_selector(".badge.cancelled")
    shot(page, "incident")
    page.click("button:has-text('Prepare proposal')")
    page.wait_for_selector("h1:has-text('Proposal v1')")
    page.click("button:has-text('Submit for approval')")
    page.wait_for_selector(".badge.submitted")
    # It opens on the entries paid, largest first.
    expect(page.locator("#lines th[aria-sort=descending]")).to_contain_text("Total")
    page.click("#all-entries")
    page.wait_for_selector("#lines th[aria-sort=ascending]")
    page.select_option("#id_sort", "total")
    # The sorted rows have replaced the first ones (the header says so) before a row is clicked.
    page.wait_for_selector("#lines th[aria-sort=descending] >> text=Total")
    page.click("#lines tbody tr >> nth=0 >> text=Statement")
    page.wait_for_selector("#statement table.statement")
    shot(page, "proposal", max_height=1100)
    shot_of(page.locator("#statement"), "statement")
    proposal = PayoutProposal.objects.get(incident__tournament__external_id="UP-2026-BROWSER-1")
    assert page.locator("#approve-form").count() == 0

    # Meanwhile another table failed 12 minutes ago, and (with a worker on Redis) another
    # tournament's refunds are being posted: the manager's dashboard shows all of it.
    from tests.support.factories import open_incident, partly_posted_proposal, sunday_major_doc

    open_incident(
        support,
        failed_ago=timedelta(minutes=12),
        cause="server_crash",
        description="Table servers unreachable; restarting.",
        doc=sunday_major_doc("UP-2026-BROWSER-2"),
    )
    busy = None
    if os.environ.get("REDIS_URL"):  # in-process posting would finish it at approval
        settings.POSTING_CHUNK_SIZE = 24  # lines: about 40% of the proposal's credits
        busy = partly_posted_proposal(
            support,
            other_manager,
            cause="network",
            description="Data centre uplink lost.",
            doc=sunday_major_doc("UP-2026-BROWSER-3"),
        )
    mpage = open_as(manager)
    waiting = mpage.inner_text("#waiting-approval")
    assert f"UP-2026-BROWSER-1 v{proposal.version}" in waiting
    mpage.wait_for_selector("#open-incidents >> text=UP-2026-BROWSER-2")
    if busy is not None:
        assert "UP-2026-BROWSER-3" in mpage.inner_text("#posting-jobs")
        percent = int(mpage.get_attribute("#posting-jobs .progress", "aria-valuenow"))
        assert 0 < percent < 100, percent
    assert "left" in mpage.inner_text("#open-incidents .countdown")
    shot(mpage, "dashboard")

    # A manager approves, quoting their password.
    _start_worker_if_needed(request)
    mpage.click(f"#waiting-approval >> text=UP-2026-BROWSER-1 v{proposal.version}")
    assert proposal.fingerprint in mpage.inner_text("#approval-fingerprint")
    mpage.fill("#id_password", "not-my-password")
    mpage.fill("#id_otp_token", "123456")  # not even checked: the password is wrong
    mpage.click("button:has-text('Approve')")
    mpage.wait_for_selector("text=That is not your password.")
    mpage.fill("#id_password", "pw-" + manager.username)
    mpage.fill("#id_otp_token", totp_code(manager))  # what the manager's app shows
    shot(mpage, "approval")
    mpage.click("button:has-text('Approve')")
    mpage.wait_for_selector("text=Proposal approved")

    # The progress bar follows the job to 100%, then the reconciliation shows.
    mpage.wait_for_selector("#posting-state:has-text('posted')", timeout=60000)
    assert mpage.get_attribute(
        "#posting .progress [role=progressbar], #posting .progress", "aria-valuenow"
    ) in ("100", None)
    assert "100%" in mpage.inner_text("#posting .progress")
    mpage.wait_for_selector("#reconciliation")
    assert "Reconciled" in mpage.inner_text("#reconciliation")
    shot(mpage, "posting")


def test_it_lets_an_auditor_find_replay_and_export_an_incident(
    open_as, support, other_manager, auditor, request
):
    from tests.browser.helpers import wait_until_posted
    from tests.support.factories import approved_proposal, sunday_major_doc

    _start_worker_if_needed(request)
    proposal = approved_proposal(
        support,
        other_manager,
        cause="network",
        description="Data centre uplink lost.",
        doc=sunday_major_doc("UP-AUDIT-1"),
    )
    wait_until_posted(proposal)
    page = open_as(auditor)
    page.click("nav >> text=Audit")
    page.fill("#id_tournament", "UP-AUDIT-1")
    page.click("button:has-text('Search')")
    page.wait_for_selector("#events >> text=approved")
    page.click("#events tr:has-text('proposal.approved') >> button:has-text('Replay')")
    # The result opens right under the row replayed, naming the proposal.
    beside = page.locator("#events tr:has-text('proposal.approved') + tr.replay-row")
    expect(beside).to_contain_text(
        f"Proposal {proposal.pk} (UP-AUDIT-1 v{proposal.version}): fingerprint matches."
    )
    shot(page, "audit")
    with page.expect_download() as download:
        page.click("text=Export CSV")
    text = open(download.value.path(), encoding="utf-8-sig").read()
    assert "proposal.approved" in text and "UP-AUDIT-1" in text
    page.click("#events tr:has-text('incident.recorded') >> a:text-is('Open')")
    page.wait_for_selector("h1:has-text('Incident')")
    assert page.locator("#actions form").count() == 0  # an auditor changes nothing
    page.goto(f"/proposals/{proposal.pk}/")
    with page.expect_download() as download:
        page.click("text=Export JSON")
    assert '"format": "payout-proposal/1"' in open(download.value.path(), encoding="utf-8").read()
    page.goto("/players/?q=p0001")  # any case
    page.wait_for_selector("#credits table.statement")
    assert "Total paid out" in page.inner_text("#credits table.statement")
    shot(page, "player-lookup")


def test_it_shows_every_error_of_a_bad_csv_and_saves_nothing(open_as, support, tmp_path):
    entries = tmp_path / "entries.csv"
    entries.write_text(
        "entry_id,player_id,screen_name,status,chips\n"
        "e1,p1,ace,active,48200\n"
        "e2,p2,bob,active,-5\n"
        "e1,p3,cid,eliminated,0\n"
        "e4,p4,dan,asleep,100\n"
    )
    prizes = tmp_path / "prizes.csv"
    prizes.write_text("place,amount\n1,100.00\n2,abc\n")
    page = open_as(support)
    page.goto("/tournaments/import/")
    form = page.locator("#csv-form")
    form.locator("#id_external_id").fill("UP-BAD-CSV")
    form.locator("#id_name").fill("Broken export")
    form.locator("#id_currency").fill("USD")
    form.locator("#id_buy_in").fill("30.00")
    form.locator("#id_fee").fill("3,00")
    started = timezone.localtime(timezone.now() - timedelta(hours=2))
    form.locator("#id_starts_at").fill(started.strftime("%Y-%m-%dT%H:%M:%S"))
    form.locator("#id_entries_csv").set_input_files(str(entries))
    form.locator("#id_prizes_csv").set_input_files(str(prizes))
    page.click("button:has-text('Import CSV')")
    page.wait_for_selector("#csv-form .errorlist")
    errors = page.inner_text("#csv-form")
    assert "row 3" in errors and "row 5" in errors  # -5 chips and the unknown status
    assert "fee" in errors.lower()
    shot(page, "import-errors")
    assert not Tournament.objects.filter(external_id="UP-BAD-CSV").exists()


def test_it_never_lets_a_manager_approve_their_own_proposal(open_as, manager, support, live_server):
    from tests.support.factories import submitted_proposal, sunday_major_doc

    proposal = submitted_proposal(manager, doc=sunday_major_doc("UP-OWN-1"))
    page = open_as(manager)
    page.goto(f"/proposals/{proposal.pk}/approval/")
    page.wait_for_selector("text=another manager must approve it")
    assert page.locator("#approve-form").count() == 0
    # A forged POST is refused by the server too.
    token = page.evaluate("document.querySelector('[name=csrfmiddlewaretoken]').value")
    response = page.request.post(
        f"{live_server.url}/proposals/{proposal.pk}/approval/",
        form={
            "csrfmiddlewaretoken": token,
            "fingerprint": proposal.fingerprint,
            "password": "pw-maria_manager",
            "otp_token": totp_code(manager),
        },
        headers={"Referer": live_server.url + "/"},
    )
    assert response.status == 403
    proposal.refresh_from_db()
    assert proposal.status == "submitted"
