"""The request id reaches the worker: every log line of a task carries the id of the request that
queued it (in the task message's headers), tasks queued by that task carry it on, and beat's
periodic tasks, queued by no request, carry none. Real Celery workers on Redis and PostgreSQL,
their lines read back from their JSON logs."""

import json

import pytest
from django.test import Client

from tests.support.factories import submitted_proposal
from tests.support.pages import approve_on_page
from tests.support.posting_support import wait_for, wait_until_posted

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

REQUEST_ID = "approval-req-7f3a9c"


def _lines(workers, proc=None):
    """Every JSON line the workers (and beat) wrote, or one process; the banners in between are
    not JSON."""
    lines = []
    text = proc.log_path.read_text() if proc is not None else workers.logs()
    for raw in text.splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            lines.append(entry)
    return lines


def _of(lines, task):
    return [line for line in lines if line.get("task") == task]


def test_a_tasks_log_lines_carry_the_id_of_the_request_that_queued_it(
    celery_worker_process, support, manager
):
    workers = celery_worker_process
    workers.start(LOG_FORMAT="json")  # with the periodic queue's worker
    proposal = submitted_proposal(support)
    client = Client()
    client.force_login(manager)
    response = approve_on_page(client, proposal, manager, HTTP_X_REQUEST_ID=REQUEST_ID)
    assert response.status_code == 302, response.content.decode()
    assert response["X-Request-ID"] == REQUEST_ID
    assert wait_until_posted(proposal).state == "posted"
    # After posting: ledger.posted -> the statements outbox -> its delivery, each a task queued
    # by the task before it.
    wait_for(
        lambda: _of(_lines(workers), "notifications.deliver_statements"),
        message="the statements' delivery to have run",
    )
    lines = _lines(workers)
    posting = _of(lines, "ledger.post_proposal")
    assert posting, "the posting task logged nothing"
    assert {line.get("request_id") for line in posting} == {REQUEST_ID}
    assert {line.get("proposal_id") for line in posting} == {proposal.pk}
    assert any("succeeded" in line["message"] for line in posting)
    # Queued by the posting task (and by the task it queued): the same request id.
    delivery = _of(lines, "notifications.deliver_statements")
    assert {line.get("request_id") for line in delivery} == {REQUEST_ID}


def test_beats_periodic_tasks_carry_no_request_id_even_on_a_worker_that_ran_a_requests_task(
    celery_worker_process, support, manager
):
    workers = celery_worker_process
    workers.start(LOG_FORMAT="json", HEARTBEAT_EVERY=1)
    proposal = submitted_proposal(support)
    client = Client()
    client.force_login(manager)
    approve_on_page(client, proposal, manager, HTTP_X_REQUEST_ID=REQUEST_ID)
    assert wait_until_posted(proposal).state == "posted"
    # The periodic queue's worker (one process) ran the events the request's approval queued...
    wait_for(
        lambda: [
            line
            for line in _of(_lines(workers, workers.periodic), "notifications.dispatch_events")
            if line.get("request_id") == REQUEST_ID
        ],
        message="the approval's events dispatched with the request id",
    )
    # ...and then beat's heartbeats: no request queued them, and none is left over.
    workers.start_beat(LOG_FORMAT="json", HEARTBEAT_EVERY=1)

    def heartbeats():
        done = [
            line
            for line in _of(_lines(workers, workers.periodic), "ops.heartbeat")
            if "succeeded" in line["message"]
        ]
        return done if len(done) >= 2 else None

    beats = wait_for(heartbeats, message="two heartbeats run by the periodic worker")
    assert all("request_id" not in line for line in beats), beats
