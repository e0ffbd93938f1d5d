"""The outage pages: recording with the running tournaments, the window's actions, the batch
review and approval with the password, the posting progress and the report."""

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from refunds_admin.outages.models import Outage
from refunds_admin.proposals import batches
from refunds_admin.proposals.models import PayoutProposal
from tests.support.factories import import_doc, outage, prepared_outage, snapshot_doc, totp_code

from .conftest import login

pytestmark = pytest.mark.django_db


def _local(dt):
    return timezone.localtime(dt).strftime("%Y-%m-%dT%H:%M:%S")


def test_the_form_lists_the_tournaments_running_at_the_failure_time(client, support):
    for x in ("RUN-1", "RUN-2"):
        import_doc(support, external_id=x)
    import_doc(support, snapshot_doc("NOT-YET", starts_at=timezone.now() - timedelta(minutes=1)))
    login(client, support)
    failed_at = _local(timezone.now() - timedelta(minutes=10))
    response = client.get("/outages/new/", {"failed_at": failed_at})
    body = response.content.decode()
    assert response.status_code == 200
    assert "RUN-1" in body and "RUN-2" in body and "NOT-YET" not in body
    assert 'id="select-all"' in body
    assert "<script>" not in body and " style=" not in body  # CSP: no inline scripts or styles
    partial = client.get("/outages/candidates/", {"failed_at": failed_at, "q": "run-2"})
    assert "RUN-2" in partial.content.decode() and "RUN-1" not in partial.content.decode()


def test_a_search_keeps_the_tournaments_already_chosen(client, support):
    one = import_doc(support, external_id="RUN-1").tournament
    import_doc(support, external_id="OTHER-2")
    login(client, support)
    failed_at = _local(timezone.now() - timedelta(minutes=10))
    body = client.get(
        "/outages/candidates/", {"failed_at": failed_at, "q": "other", "tournaments": [one.pk]}
    ).content.decode()
    assert f'value="{one.pk}" id="t-{one.pk}" class="candidate" checked' in body
    assert "OTHER-2" in body


def test_support_records_an_outage_from_the_form(client, support):
    ids = [import_doc(support, external_id=x).tournament.pk for x in ("F-1", "F-2", "F-3")]
    login(client, support)
    response = client.post(
        "/outages/new/",
        {
            "failed_at": _local(timezone.now() - timedelta(minutes=10)),
            "cause": "network",
            "description": "uplink lost",
            "people_involved": "ops on call",
            "tournaments": ids,
        },
    )
    outage_ = Outage.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/outages/{outage_.pk}/"
    assert outage_.members.count() == 3
    page = client.get(response["Location"]).content.decode()
    assert "F-1" in page and "30-minute window" in page


def test_a_refused_outage_shows_every_problem_and_records_nothing(client, support):
    late = import_doc(
        support, snapshot_doc("LATE", starts_at=timezone.now() - timedelta(minutes=2))
    )
    login(client, support)
    response = client.post(
        "/outages/new/",
        {
            "failed_at": _local(timezone.now() - timedelta(minutes=10)),
            "cause": "network",
            "tournaments": [late.tournament.pk],
        },
    )
    assert response.status_code == 400
    assert "LATE" in response.content.decode()
    assert Outage.objects.count() == 0


def test_an_auditor_cannot_record_an_outage(client, auditor):
    login(client, auditor)
    assert client.get("/outages/new/").status_code == 403


def test_a_manager_declares_the_rest_not_resumable_from_the_page(client, support, manager):
    o = outage(support, failed_ago=timedelta(minutes=5))
    login(client, manager)
    response = client.post(f"/outages/{o.pk}/not-resumable/", {"reason": "rack gone"})
    assert response.status_code == 302
    page = client.get(f"/outages/{o.pk}/").content.decode()
    assert "declared the rest of outage" in page and "Cancelled" in page


def test_support_cannot_declare_the_rest_not_resumable(client, support):
    o = outage(support, failed_ago=timedelta(minutes=5))
    login(client, support)
    assert client.post(f"/outages/{o.pk}/not-resumable/", {"reason": "x"}).status_code == 403


def test_the_review_page_lists_proposals_with_totals_and_the_outage_fingerprint(
    client, support, manager
):
    o = prepared_outage(support, docs={"OUT-3": {"currency": "EUR"}})
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/review/").content.decode()
    data = batches.review(o)
    assert data["fingerprint"] in page
    assert "Total EUR" in page and "Total USD" in page
    assert page.count('class="row-pick"') == 3


def test_a_manager_approves_the_batch_with_their_password(client, support, manager):
    o = prepared_outage(support)
    login(client, manager)
    data = batches.review(o)
    form = {
        "fingerprint": data["fingerprint"],
        "seen": [f"{p.pk}:{p.fingerprint}" for p in data["approvable"]],
    }
    wrong = client.post(f"/outages/{o.pk}/review/", {**form, "password": "nope"})
    assert wrong.status_code == 400 and "not your password" in wrong.content.decode()
    assert not PayoutProposal.objects.filter(status="approved").exists()
    response = client.post(
        f"/outages/{o.pk}/review/",
        {**form, "password": "pw-maria_manager", "otp_token": totp_code(manager)},
    )
    assert response.status_code == 302 and response["Location"] == f"/outages/{o.pk}/posting/"
    assert PayoutProposal.objects.filter(status="approved").count() == 3
    posting = client.get(f"/outages/{o.pk}/posting/").content.decode()
    assert "credits" in posting and "OUT-2" in posting


def test_a_selection_is_reviewed_then_approved_alone(client, support, manager):
    o = prepared_outage(support)
    first = batches.live_proposals(o)[0]
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/review/", {"only": [first.pk]}).content.decode()
    data = batches.review(o, only=[first.pk])
    assert data["fingerprint"] in page and "Approve this proposal · USD " in page
    response = client.post(
        f"/outages/{o.pk}/review/?only={first.pk}",
        {
            "fingerprint": data["fingerprint"],
            "seen": [f"{first.pk}:{first.fingerprint}"],
            "password": "pw-maria_manager",
            "otp_token": totp_code(manager),
        },
    )
    assert response.status_code == 302
    assert list(PayoutProposal.objects.filter(status="approved")) == [first]


def test_the_preparer_sees_four_eyes_and_cannot_approve(client, manager, other_manager):
    o = prepared_outage(manager)
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/review/").content.decode()
    assert "four eyes" in page and 'id="approve-batch"' not in page
    data = batches.review(o)
    response = client.post(
        f"/outages/{o.pk}/review/",
        {
            "fingerprint": data["fingerprint"],
            "seen": [f"{p.pk}:{p.fingerprint}" for p in data["approvable"]],
            "password": "pw-maria_manager",
            "otp_token": totp_code(manager),
        },
    )
    assert response.status_code == 403
    assert not PayoutProposal.objects.filter(status="approved").exists()


def test_the_report_and_its_csv(client, support, manager, auditor):
    o = prepared_outage(support)
    from tests.support.factories import approve_outage

    approve_outage(o, manager)
    login(client, auditor)
    page = client.get(f"/outages/{o.pk}/report/").content.decode()
    assert "Cost per currency" in page and "Players paid" in page and "OUT-3" in page
    response = client.get(f"/outages/{o.pk}/report.csv")
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert rows[0][:3] == ["tournament", "name", "incident_status"]
    assert [r[0] for r in rows[1:]] == ["OUT-1", "OUT-2", "OUT-3"]
    totals = {p.incident.tournament.external_id: p.total_cents for p in batches.live_proposals(o)}
    assert rows[1][6] == f"{totals['OUT-1'] // 100}.{totals['OUT-1'] % 100:02d}"


def test_the_outage_list_and_the_nav_link(client, support):
    o = outage(support)
    login(client, support)
    page = client.get("/outages/").content.decode()
    assert f"/outages/{o.pk}/" in page and 'href="/outages/"' in page


def test_support_marks_some_tournaments_resumed_and_adds_one_found_later(client, support):
    o = outage(support, failed_ago=timedelta(minutes=5))
    first = o.members.order_by("id").first().incident
    late = import_doc(support, external_id="FOUND-LATER").tournament
    login(client, support)
    page = client.get(f"/outages/{o.pk}/").content.decode()
    assert "FOUND-LATER" in page  # offered in "add a tournament found later"
    response = client.post(
        f"/outages/{o.pk}/resumed/",
        {"resumed_at": _local(timezone.now() - timedelta(minutes=1)), "incidents": [first.pk]},
    )
    assert response.status_code == 302
    first.refresh_from_db()
    assert first.status == "resumed"
    assert client.post(f"/outages/{o.pk}/add/", {"tournament": late.pk}).status_code == 302
    assert o.members.count() == 4


def test_a_manager_confirms_the_site_wide_finding_once_from_the_page(client, support, manager):
    o = outage(support)
    login(client, manager)
    client.post(f"/outages/{o.pk}/site-wide/", {"justification": "DC1 down for two hours"})
    o.refresh_from_db()
    assert o.site_wide_issue
    page = client.get(f"/outages/{o.pk}/").content.decode()
    assert "Rule 1: full refund" in page and 'id="site-wide-form"' not in page


def test_the_incident_page_names_its_outage(client, support):
    o = outage(support)
    incident = o.members.first().incident
    login(client, support)
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert f'href="/outages/{o.pk}/"' in page


def test_the_review_page_flags_a_stale_proposal_before_approval(client, support, manager):
    from refunds_admin.incidents.services import import_snapshot
    from tests.support.factories import dumps

    o = prepared_outage(support)
    import_snapshot(
        dumps(snapshot_doc("OUT-2", active_chips=[60_000, 20_000, 15_000, 5_000])).encode(),
        acting_user=support,
        source="upload",
    )
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/review/").content.decode()
    assert page.count('class="error stale"') == 1 and "re-imported" in page


def test_the_prepare_progress_reloads_the_page_once_the_run_finished(client, support):
    o = prepared_outage(support)
    login(client, support)
    partial = client.get(f"/outages/{o.pk}/prepare/progress/", headers={"HX-Request": "true"})
    assert partial["HX-Refresh"] == "true"
    assert "Prepared and submitted" in partial.content.decode()
    assert "Prepared and submitted Prepared and submitted" not in partial.content.decode()


def test_adding_a_tournament_to_an_outage_with_a_finding_needs_both_factors(
    client, support, manager, other_manager
):
    from django.urls import reverse

    from refunds_admin.incidents.models import Incident
    from refunds_admin.outages import services as outage_services
    from tests.conftest import password_only_login

    o = outage(support, failed_ago=timedelta(minutes=5))
    outage_services.confirm_site_wide_issue(o, justification="DC down", acting_user=manager)
    late = import_doc(support, external_id="FOUND-LATER").tournament
    # Signed in with the password alone: sent for the code, nothing added, no finding applied.
    password_only_login(client, other_manager)
    response = client.post(f"/outages/{o.pk}/add/", {"tournament": late.pk})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("mfa_verify"))
    assert o.members.count() == 3 and not Incident.objects.filter(tournament=late).exists()
    # With both factors it is added, and the finding applied in its author's name.
    login(client, other_manager)
    assert client.post(f"/outages/{o.pk}/add/", {"tournament": late.pk}).status_code == 302
    incident = Incident.objects.get(tournament=late)
    assert incident.site_wide_confirmed_by == manager
    assert incident.site_wide_applied_by == other_manager


def test_adding_a_tournament_found_later_asks_first_naming_what_it_does(
    client, support, manager, other_manager
):
    # Adding records an incident that cannot be taken back and, once the site-wide finding was
    # confirmed, applies rule 1 in the adder's name, who then may not approve its proposal; the
    # button asked nothing (every other irreversible step on the page asks first).
    from refunds_admin.outages import services as outage_services

    o = outage(support, failed_ago=timedelta(minutes=5))
    import_doc(support, external_id="FOUND-LATER")
    login(client, support)
    tag = _form_tag(client.get(f"/outages/{o.pk}/").content.decode(), "add-form")
    assert "data-confirm=" in tag and "cannot be undone" in tag
    outage_services.confirm_site_wide_issue(o, justification="DC down", acting_user=manager)
    login(client, other_manager)
    tag = _form_tag(client.get(f"/outages/{o.pk}/").content.decode(), "add-form")
    assert "Rule 1" in tag and "may not approve" in tag


def _form_tag(page, form_id):
    """The opening tag of the form with this id, whatever the order of its attributes."""
    at = page.index(f'id="{form_id}"')
    return page[page.rindex("<form", 0, at) : page.index(">", at)]


def test_the_review_of_one_proposal_speaks_of_one_proposal(client, support, manager):
    o = prepared_outage(support)
    first = batches.live_proposals(o)[0]
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/review/", {"only": [first.pk]}).content.decode()
    assert "sorted fingerprints of the 1 proposals" not in page
    assert "the fingerprint of the 1 proposal:" in page


def test_the_history_names_the_author_of_a_finding_applied_to_a_tournament_added_later(
    client, support, manager, other_manager, auditor
):
    # The event recorded "Finding by manager, applied by otto", but its sentence (audit list,
    # incident timeline, dashboard) read "otto confirmed that site-wide issues impaired play".
    from refunds_admin.audit.display import describe
    from refunds_admin.audit.models import AuditEvent
    from refunds_admin.outages import services as outage_services

    o = outage(support, failed_ago=timedelta(minutes=5))
    outage_services.confirm_site_wide_issue(o, justification="DC down", acting_user=manager)
    late = import_doc(support, external_id="FOUND-LATER").tournament
    outage_services.add_tournament(o, late, acting_user=other_manager, second_factor=True)
    event = AuditEvent.objects.filter(
        action="incident.site_wide_confirmed", tournament_external_id="FOUND-LATER"
    ).get()
    sentence = describe(event)
    finder, adder = manager.get_username(), other_manager.get_username()
    assert not sentence.startswith(f"{adder} confirmed"), sentence
    assert f"{adder} applied {finder}'s finding" in sentence, sentence


def test_the_outage_page_offers_approval_only_to_a_manager(client, support, manager, auditor):
    """Everyone may open the batch review; the way there promises an approval only to a manager."""
    o = prepared_outage(support)
    for user, words in ((support, "Review"), (auditor, "Review"), (manager, "Review and approve")):
        client.force_login(user)
        page = client.get(f"/outages/{o.pk}/").content.decode()
        top = page.split('id="to-review-top">')[1].split("</a>")[0]
        batch = page.split('id="to-review">')[1].split("</a>")[0]
        assert (top, batch) == (words, f"{words} the batch"), user


def test_the_posting_summary_counts_what_its_rows_say(client, support, manager):
    """A running job whose worker stopped sending heartbeats is "stalled, resuming" in its row;
    the summary's badges above must count it so, not as the raw state "running"."""
    from refunds_admin.ledger.models import PostingJob
    from refunds_admin.ledger.posting import schedule_posting
    from tests.support.factories import approve_outage

    o = prepared_outage(support)
    approve_outage(o, manager)
    first, *rest = PayoutProposal.objects.filter(status="approved").order_by("pk")
    job = schedule_posting(first)
    PostingJob.objects.filter(pk=job.pk).update(
        state="running", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/posting/").content.decode()
    summary = page.split('id="posting-summary"', 1)[1].split("</p>", 1)[0]
    assert "1 stalled, resuming" in summary and "running" not in summary
    assert f"{len(rest)} queued" in summary
    assert "Stalled, resuming" in page.split('id="posting-rows"', 1)[1]


def test_the_outage_form_and_page_default_to_whole_minutes_as_the_incident_form(
    client, support, time_machine
):
    """The default failure time (and resumption time) is now in whole minutes, as on the
    incident form: typing 14:05 must not keep the seconds of the moment the page opened."""
    time_machine.move_to(timezone.now().replace(second=27, microsecond=0), tick=False)
    o = outage(support, failed_ago=timedelta(minutes=5))
    login(client, support)
    whole_minute = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
    form = client.get("/outages/new/").content.decode()
    value = re.search(r'name="failed_at" value="([^"]+)"', form).group(1)
    assert whole_minute.fullmatch(value), value
    incident_form = client.get("/incidents/new/").content.decode()
    assert value == re.search(r'name="failed_at" value="([^"]+)"', incident_form).group(1)
    page = client.get(f"/outages/{o.pk}/").content.decode()
    resumed = re.search(r'name="resumed_at" value="([^"]+)"', page).group(1)
    assert whole_minute.fullmatch(resumed), resumed


def test_reviewing_the_picked_proposals_with_none_ticked_says_so_and_keeps_the_list(
    client, support, manager
):
    o = prepared_outage(support)
    proposals = batches.live_proposals(o)
    login(client, manager)
    page = client.get(f"/outages/{o.pk}/review/").content.decode()
    # The button names itself in the query, so an empty pick is told from "show every one".
    button = page.split("Review only the picked proposals")[0].rsplit("<button", 1)[1]
    assert 'name="picked"' in button
    response = client.get(f"/outages/{o.pk}/review/", {"picked": "1"})
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="none-picked"' in body and "No proposal was ticked" in body
    assert "Showing the" not in body  # not presented as a selection
    assert all(f'name="only" value="{p.pk}"' in body for p in proposals)  # the list is kept
    assert f"Approve all {len(proposals)} proposals" in body


def test_marking_resumed_with_no_tournament_ticked_says_so_in_staff_words(client, support):
    o = outage(support, failed_ago=timedelta(minutes=5))
    login(client, support)
    page = client.get(f"/outages/{o.pk}/").content.decode()
    # Nothing ticked, nothing to confirm: app.js asks only when a tournament is ticked.
    form = page.split('id="resumed-form"')[1].split(">")[0]
    assert 'data-confirm-if="input[name=incidents]:checked"' in form
    response = client.post(
        f"/outages/{o.pk}/resumed/",
        {"resumed_at": _local(timezone.now() - timedelta(minutes=1))},
        follow=True,
    )
    body = response.content.decode()
    assert "No tournament was ticked" in body
    assert "none chosen" not in body and "incidents:" not in body
    assert o.members.filter(incident__status="resumed").count() == 0


def test_a_tournament_whose_policy_cannot_be_applied_says_what_to_do_next(client, support):
    """The batch prepare refuses a tournament whose prize table is smaller than the buy-ins
    owed back: its row says what staff can do about it, and links its tournament page."""
    small_pool = {"prizes": [{"place": 1, "amount": "50.00"}, {"place": 2, "amount": "40.00"}]}
    o = prepared_outage(support, docs={"OUT-2": small_pool})
    client.force_login(support)
    page = client.get(f"/outages/{o.pk}/").content.decode()
    row = page.split('id="prepare-results"', 1)[1].split("OUT-2", 1)[1].split("</tr>", 1)[0]
    assert "cannot be applied automatically" in row
    assert "what to do" in row and "confirms management" in row and "prepare every" in row
    tournament = (
        Outage.objects.get(pk=o.pk)
        .members.get(incident__tournament__external_id="OUT-2")
        .incident.tournament
    )
    assert f'href="/tournaments/{tournament.pk}/">OUT-2' in page
