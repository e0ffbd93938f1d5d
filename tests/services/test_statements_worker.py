"""Statements with a real Celery worker on Redis and PostgreSQL, killed with SIGKILL while it is
delivering: the next worker sends what is left, with the same Idempotency-Keys, and every
player is told exactly once by the webhook (a real HTTP server on 127.0.0.1)."""

from datetime import timedelta

import pytest

from refunds_admin.notifications import services
from refunds_admin.notifications.models import StatementJob, StatementMessage
from tests.support.factories import approved_proposal, many_players
from tests.support.fake_webhook import FakeWebhook
from tests.support.posting_support import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

PLAYERS = 150


def test_it_tells_every_player_once_after_the_worker_is_killed_mid_delivery(
    celery_worker_process, support, manager
):
    with FakeWebhook(delay=0.02) as webhook:
        env = {
            "NOTIFY_URL": webhook.url,
            "NOTIFY_TOKEN": webhook.token,
            "STATEMENT_CHANNEL": "webhook",
            "NOTIFY_CONCURRENCY": 2,
            "NOTIFY_BATCH_SIZE": 10,
        }
        first = celery_worker_process.start("first", **env)
        # Approval commits -> posting on the worker -> ledger.posted -> statements on the worker.
        proposal = approved_proposal(support, manager, **many_players(PLAYERS))
        wait_for(lambda: len(webhook.delivered) >= 40, timeout=90, message="delivery to start")
        celery_worker_process.kill(first)
        told_before = len(webhook.delivered)
        assert told_before < PLAYERS, "the worker finished before it could be killed"
        job = StatementJob.objects.get(proposal=proposal)
        assert job.state == StatementJob.State.RUNNING

        celery_worker_process.start("second", **env)
        # The sweeper (Celery beat in production) finds the job without heartbeat.
        wait_for(
            lambda: (
                services.sweep_statements(stale_after=timedelta(0)) is not None
                and StatementJob.objects.get(proposal=proposal).state == StatementJob.State.DONE
            ),
            timeout=120,
            interval=1.0,
            message="the second worker to finish the statements",
        )

        told = webhook.players_told()
        assert dict(told) == {f"p{i}": 1 for i in range(1, PLAYERS + 1)}
        job.refresh_from_db()
        assert (job.total, job.sent, job.failed) == (PLAYERS, PLAYERS, 0)
        assert (
            not StatementMessage.objects.filter(proposal=proposal)
            .exclude(state=StatementMessage.State.SENT)
            .exists()
        )
        # Every POST of a player carried that player's one key.
        assert set(webhook.posts) == {
            services.statement_key(proposal.pk, f"p{i}") for i in range(1, PLAYERS + 1)
        }
