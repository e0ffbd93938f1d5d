"""Player statements after posting: each credited player told once, through the webhook (a real
HTTP server on 127.0.0.1 that fails in every way the adapter must survive) or by e-mail."""

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.notifications import services, staff
from refunds_admin.notifications.models import StatementJob, StatementMessage
from refunds_admin.proposals.models import PayoutLine
from refunds_admin.proposals.services import statement
from tests.support.factories import posted_proposal
from tests.support.fake_webhook import FakeWebhook

MState = StatementMessage.State


@pytest.fixture
def webhook(settings):
    with FakeWebhook() as hook:
        settings.NOTIFY_URL = hook.url
        settings.NOTIFY_TOKEN = hook.token
        settings.STATEMENT_CHANNEL = "webhook"
        settings.NOTIFY_TIMEOUT = 0.3
        settings.NOTIFY_BACKOFF = 0.01
        settings.NOTIFY_CONCURRENCY = 3
        settings.NOTIFY_BATCH_SIZE = 2
        yield hook


def credited(proposal):
    return dict(
        PayoutLine.objects.filter(proposal=proposal, total_cents__gt=0).values_list(
            "player_id", "entry_id"
        )
    )


def post_and_tell(support, manager, **kwargs):
    """Post a proposal, derive its statements' outbox from the audit trail, deliver."""
    proposal = posted_proposal(support, manager, **kwargs)
    staff.dispatch_events()
    return proposal, services.deliver_statements(proposal.pk)


def test_it_tells_each_credited_player_once_through_the_webhook(support, manager, webhook):
    proposal, state = post_and_tell(support, manager)

    assert state == StatementJob.State.DONE
    players = credited(proposal)
    assert len(players) == 4  # the four active entries; eliminated entries get nothing
    assert dict(webhook.players_told()) == {p: 1 for p in players}
    for key, (body,) in webhook.delivered.items():
        assert key == services.statement_key(proposal.pk, body["player_id"])
        # The policy's own layout: exactly the text staff see (explain).
        assert body["text"] == statement(proposal, players[body["player_id"]]) + "\n"
        assert "Total paid out" in body["html"] and "<table" in body["html"]
    job = StatementJob.objects.get(proposal=proposal)
    assert (job.total, job.sent, job.failed, job.no_address) == (4, 4, 0, 0)
    assert job.endpoint == webhook.url + "/messages"
    assert set(StatementMessage.objects.filter(job=job).values_list("remote_id", flat=True)) == {
        f"m-{k}" for k in webhook.delivered
    }
    # Running again (a redelivered task) sends nothing more.
    assert services.deliver_statements(proposal.pk) == StatementJob.State.DONE
    staff.dispatch_events()
    assert sum(webhook.posts.values()) == 4


def test_it_tells_each_player_once_against_a_failing_webhook(support, manager, webhook):
    # A CRM that delivers again on every POST: a blind resend would tell a player twice.
    webhook.ignore_keys = True
    webhook.script = {
        "p1": ["500", "500", "429", "ok"],
        "p2": ["timeout"],  # delivered, then answered too late: must ask before resending
        "p3": ["drop"],  # delivered, then the connection dropped without an answer
        "p4": ["409"],  # a definite refusal: for a human
    }
    proposal, state = post_and_tell(support, manager)

    assert state == StatementJob.State.DONE
    assert dict(webhook.players_told()) == {"p1": 1, "p2": 1, "p3": 1}
    failed = StatementMessage.objects.get(proposal=proposal, state=MState.FAILED)
    assert failed.player_id == "p4" and "409" in failed.error
    job = StatementJob.objects.get(proposal=proposal)
    assert (job.sent, job.failed) == (3, 1)

    with pytest.raises(PermissionDenied):
        services.retry_statements(proposal, acting_user=support)
    assert services.retry_statements(proposal, acting_user=manager) == 1
    assert services.deliver_statements(proposal.pk) == StatementJob.State.DONE
    assert dict(webhook.players_told()) == {"p1": 1, "p2": 1, "p3": 1, "p4": 1}
    assert AuditEvent.objects.filter(action="notifications.statements_retried").count() == 1
    with pytest.raises(Refused):
        services.retry_statements(proposal, acting_user=manager)  # nothing failed any more


def test_each_outcome_is_written_to_its_own_message_word_for_word(support, manager, webhook):
    # The outcomes of a batch are written in one statement: awkward text (quotes, braces,
    # commas, a backslash, accents) and an empty sent_at land on the right message unchanged.
    refusal = 'player {p2}, "closed", \\ n\'a pas de compte; café'
    webhook.script = {"p2": ["409:" + refusal]}
    proposal, state = post_and_tell(support, manager)

    assert state == StatementJob.State.DONE
    messages = {m.player_id: m for m in StatementMessage.objects.filter(proposal=proposal)}
    refused = messages.pop("p2")
    assert (refused.state, refused.attempts, refused.remote_id, refused.sent_at) == (
        MState.FAILED,
        1,
        "",
        None,
    )
    assert refused.error == f"webhook refused (409): {refusal}"
    assert len(messages) == 3
    for message in messages.values():
        assert message.state == MState.SENT and message.attempts == 1 and message.error == ""
        assert message.remote_id == f"m-{message.idempotency_key}"
        assert message.sent_at is not None and message.sent_at == message.updated_at


def test_it_stops_on_a_refused_token_and_a_manager_resumes(support, manager, webhook, settings):
    settings.NOTIFY_TOKEN = "wrong"
    proposal, state = post_and_tell(support, manager)
    job = StatementJob.objects.get(proposal=proposal)
    assert state == job.state == StatementJob.State.FAILED
    assert "401" in job.last_error and not webhook.delivered

    settings.NOTIFY_TOKEN = webhook.token
    services.retry_statements(proposal, acting_user=manager)
    assert services.deliver_statements(proposal.pk) == StatementJob.State.DONE
    assert dict(webhook.players_told()) == {p: 1 for p in credited(proposal)}


def test_it_retries_later_while_the_webhook_is_down(support, manager, webhook, settings):
    settings.NOTIFY_MAX_TRIES = 2
    webhook.script = {"p2": ["500", "500", "500"]}
    proposal = posted_proposal(support, manager)
    staff.dispatch_events()
    with pytest.raises(Exception, match="no confirmation"):
        services.deliver_statements(proposal.pk)
    job = StatementJob.objects.get(proposal=proposal)
    assert job.state == StatementJob.State.QUEUED and "no confirmation" in job.last_error
    assert services.deliver_statements(proposal.pk) == StatementJob.State.DONE  # the retry
    assert dict(webhook.players_told()) == {p: 1 for p in credited(proposal)}


def test_it_emails_players_with_an_address_and_lists_the_others(support, manager, settings):
    settings.STATEMENT_CHANNEL = "email"
    proposal, state = post_and_tell(
        support, manager, emails={"e1": "Ann@Example.test", "e3": "cy@example.test"}
    )
    assert state == StatementJob.State.DONE
    statements = [m for m in mail.outbox if "Your refund" in m.subject]
    assert sorted(m.to[0] for m in statements) == ["Ann@Example.test", "cy@example.test"]
    ann = next(m for m in statements if m.to == ["Ann@Example.test"])
    assert ann.body == statement(proposal, "e1") + "\n"
    assert ann.alternatives[0].mimetype == "text/html"
    assert ann.alternatives[0].content.startswith('<!doctype html><html lang="en"><head>')
    missing = StatementMessage.objects.filter(proposal=proposal, state=MState.NO_ADDRESS)
    assert sorted(missing.values_list("player_id", flat=True)) == ["p2", "p4"]
    job = StatementJob.objects.get(proposal=proposal)
    assert (job.total, job.sent, job.no_address) == (2, 2, 2)


def test_it_lists_an_email_left_sending_by_a_killed_worker_instead_of_resending(
    support, manager, settings
):
    settings.STATEMENT_CHANNEL = "email"
    proposal = posted_proposal(support, manager, emails={"e1": "a@example.test"})
    staff.dispatch_events()
    # What a worker killed between the claim and the mail server's answer leaves behind.
    StatementMessage.objects.filter(proposal=proposal).exclude(state=MState.NO_ADDRESS).update(
        state=MState.SENDING
    )
    services.deliver_statements(proposal.pk)
    message = StatementMessage.objects.get(proposal=proposal, player_id="p1")
    assert message.state == MState.FAILED and "outcome unknown" in message.error
    assert not [m for m in mail.outbox if "Your refund" in m.subject]


def test_it_refuses_an_invalid_email_in_the_snapshot(support):
    from tests.support.factories import import_doc

    with pytest.raises(Refused, match=r"entries\[0\] \(e1\)\.email"):
        import_doc(support, emails={"e1": "not an address"})


def test_a_manager_retries_failed_statements_from_the_outbox_page(
    client, support, manager, webhook
):
    from django.urls import reverse

    webhook.script = {"p3": ["409"]}
    proposal, _ = post_and_tell(support, manager)
    client.force_login(manager)
    page = client.get(reverse("statement_outbox", args=[proposal.pk]) + "?show=failed")
    assert "Retry failed statements" in page.text and "409" in page.text
    response = client.post(reverse("statement_retry", args=[proposal.pk]), follow=True)
    assert "1 failed statement queued again." in response.text
    # The after-commit kick did not run in this test's transaction: the task would run it.
    assert services.deliver_statements(proposal.pk) == StatementJob.State.DONE
    assert webhook.players_told()["p3"] == 1


@pytest.mark.postgres
@pytest.mark.parametrize("channel", ["webhook", "email"])
def test_it_writes_the_same_outbox_in_sql_as_in_python(support, manager, channel):
    # PostgreSQL writes the outbox in one INSERT ... SELECT; it must be the very outbox the
    # Python writer makes: one message per player, their entries in snapshot order, the first
    # of their e-mail addresses, the same key, in the order of their first credited entry.
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from refunds_admin.notifications.adapters import EmailNotifier, WebhookNotifier

    proposal = posted_proposal(
        support,
        manager,
        emails={"e5": "second@example.test", "e3": "cy@example.test"},
        # Failed 5 minutes in: every entry gets its buy-in back, the eliminated ones too.
        starts_at=timezone.now() - timedelta(minutes=45),
        # A re-entry: p2 was eliminated in e5 before playing e2; only e5 carries an address.
        entry_fields={4: {"player_id": "p2", "screen_name": "again"}},
    )
    notifier = (
        WebhookNotifier("http://127.0.0.1:9", "token") if channel == "webhook" else EmailNotifier()
    )
    now = timezone.now()

    def outbox(write):
        with transaction.atomic():
            job = StatementJob.objects.create(
                proposal=proposal, channel=channel, endpoint="-", total=0
            )
            counts = write(job, proposal, notifier, now)
            rows = list(
                StatementMessage.objects.filter(job=job)
                .order_by("id")
                .values_list(
                    "player_id", "screen_name", "entry_ids", "total_cents", "address",
                    "idempotency_key", "state", "attempts", "remote_id", "error", "updated_at",
                )
            )  # fmt: skip
            transaction.set_rollback(True)
        return counts, rows

    in_sql = outbox(services._write_messages_in_sql)
    assert in_sql == outbox(services._write_messages_in_python)
    counts, rows = in_sql
    players = ["p1", "p2", "p3", "p4", "p6", "p7", "p8", "p9", "p10"]
    assert [row[0] for row in rows] == players
    assert rows[1][:4] == ("p2", "player2", ["e2", "e5"], 6600)
    if channel == "email":
        assert counts == (9, 7)
        assert {row[0]: row[4] for row in rows if row[4]} == {
            "p2": "second@example.test",
            "p3": "cy@example.test",
        }
    else:
        assert counts == (9, 0)
        assert [row[4] for row in rows] == players


@pytest.mark.postgres
def test_a_message_stays_with_its_job_and_proposal(support, manager):
    # The foreign keys are checked once per INSERT; UPDATEs of a message's outcome take no lock
    # on the job or the proposal, and may not move the message elsewhere.
    from django.db import IntegrityError, transaction

    proposal, _ = post_and_tell(support, manager)
    other = posted_proposal(support, manager, external_id="T-2")
    message = StatementMessage.objects.filter(proposal=proposal).first()
    StatementMessage.objects.filter(pk=message.pk).update(state=MState.FAILED, error="bounced")
    with pytest.raises(IntegrityError, match="stays with its job"), transaction.atomic():
        StatementMessage.objects.filter(pk=message.pk).update(proposal=other)
    with pytest.raises(IntegrityError, match="does not exist"), transaction.atomic():
        StatementMessage.objects.create(
            job_id=message.job_id + 1000, proposal=proposal, player_id="p0", entry_ids=[],
            total_cents=1, idempotency_key=f"statement/proposal-{proposal.pk}/p0",
        )  # fmt: skip


def test_a_statement_names_what_came_back_in_which_form():
    from refunds_admin.notifications.statements import form_sentences

    credits = [
        {"method": "cash", "ticket_id": "", "amount_cents": 500},
        {"method": "ticket", "ticket_id": "TKT-88121", "amount_cents": 5500},
        {"method": "tournament_money", "ticket_id": "", "amount_cents": 2000},
    ]
    assert form_sentences(credits, "USD") == [
        "Your ticket TKT-88121 ($55.00) has been returned to your account",
        "$20.00 has been credited to your tournament money balance",
        "$5.00 has been paid to your cash balance",
    ]
    # All in cash: the statement itself says it all.
    assert form_sentences([{"method": "cash", "ticket_id": "", "amount_cents": 500}], "USD") == []
