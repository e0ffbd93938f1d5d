"""Upgrading keeps every waiting posting job's state: the fields that said "outage" for the
wallet not answering now say "wallet unavailable", with their values, and the reason the page
shows is reworded the same way (ledger migration 0006)."""

from datetime import UTC, datetime

import pytest

from refunds_admin.ledger import posting
from tests.support.factories import approved_proposal
from tests.support.migrations import latest, migrate

BEFORE = [("ledger", "0005_keys_and_append_only")]
AFTER = [("ledger", "0006_wallet_unavailable")]


@pytest.mark.django_db(transaction=True)
def test_a_job_waiting_for_the_cashier_keeps_its_state_through_the_upgrade(support, manager):
    proposal = approved_proposal(support, manager)
    posting.post_proposal(proposal.pk)  # the job exists (posted already when in-process)
    since = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    old_apps = migrate(BEFORE)
    OldJob = old_apps.get_model("ledger", "PostingJob")
    OldJob.objects.filter(proposal_id=proposal.pk).update(
        outage_since=since,
        outage_retries=3,
        last_error="waiting for the wallet (outage since 2026-03-01 12:00:00 UTC, retry 3 in "
        "20 s): CashierUnavailable: 503",
    )
    try:
        # The model as of 0006 (later migrations add fields the current model reads).
        job = migrate(AFTER).get_model("ledger", "PostingJob").objects.get(proposal_id=proposal.pk)
        assert (job.wallet_unavailable_since, job.wallet_unavailable_retries) == (since, 3)
        assert job.last_error == (
            "waiting for the wallet (unavailable since 2026-03-01 12:00:00 UTC, retry 3 in 20 s): "
            "CashierUnavailable: 503"
        )
    finally:
        migrate(latest())  # the schema the other tests expect
