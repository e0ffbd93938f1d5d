"""Operator logs: request ids, user and object ids on every line, and never a secret."""

import io
import json
import logging
import re

import pytest
from celery import signals
from django.test import Client, override_settings

from refunds_admin.ledger.tasks import post_proposal
from refunds_admin.ops import logs
from tests.support.factories import draft_proposal
from tests.support.pages import approve_on_page

SECRET = "s3cr3t-Value-9f8e7d"


@pytest.fixture
def json_lines():
    """Every record the app logs, through the JSON formatter the console handler uses."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)

    def read():
        return [json.loads(line) for line in stream.getvalue().splitlines()]

    read.text = stream.getvalue
    yield read
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.mark.parametrize(
    "line",
    [
        f"Authorization: Bearer {SECRET}",
        f"headers={{'Authorization': 'Token {SECRET}'}}",
        f"POST body username=ada&password={SECRET}&next=/",
        f"csrfmiddlewaretoken={SECRET}",
        f"Cookie: sessionid={SECRET}; csrftoken=abc",
        f"sessionid={SECRET}",
        f'{{"password": "{SECRET}", "user": "ada"}}',
        f"{{'cashier_token': '{SECRET}'}}",
        f"GET /accounts/reset/MQ/{SECRET}/ 200",
        f"GET /api/x?token={SECRET}&page=2",
        f"new_password1={SECRET}",
    ],
)
def test_it_masks_secrets_in_any_line(line):
    masked = logs.redact(line)
    assert SECRET not in masked
    assert "[redacted]" in masked


def test_it_keeps_lines_without_secrets_as_they_are():
    line = "posting of proposal 42 stopped: cashier answered 503 for key p42-e7-prize"
    assert logs.redact(line) == line


def test_it_writes_one_json_object_per_line_without_secret_fields():
    record = logging.LogRecord(
        "refunds_admin.x", logging.WARNING, __file__, 1, "a\nb %s", (7,), None
    )
    record.proposal_id = 12
    record.password = SECRET
    record.auth_token = SECRET
    record.request = object()  # Django's request objects never become fields
    try:
        raise ValueError(f"login failed for password={SECRET}")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    token = logs.bind(request_id="r-123456789", user_id=5)
    try:
        line = logs.JsonFormatter().format(record)
    finally:
        logs.unbind(token)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "a\nb 7"
    assert entry["level"] == "WARNING" and entry["logger"] == "refunds_admin.x"
    assert (entry["request_id"], entry["user_id"], entry["proposal_id"]) == ("r-123456789", 5, 12)
    assert "password" not in entry and "auth_token" not in entry and "request" not in entry
    assert "ValueError" in entry["exception"]
    assert SECRET not in line


@pytest.mark.django_db
@override_settings(LOG_REQUESTS=True)
def test_it_logs_each_request_with_its_id_user_and_proposal(json_lines, support, manager):
    proposal = draft_proposal(support)
    client = Client()
    client.force_login(manager)
    response = client.get(f"/proposals/{proposal.pk}/", HTTP_X_REQUEST_ID="proxy-req-0001")
    assert response.status_code == 200
    assert response["X-Request-ID"] == "proxy-req-0001"
    (line,) = [e for e in json_lines() if e["logger"] == "refunds_admin.request"]
    assert line["request_id"] == "proxy-req-0001"
    assert line["user_id"] == manager.pk
    assert line["proposal_id"] == proposal.pk
    assert (line["method"], line["path"], line["status"]) == (
        "GET",
        f"/proposals/{proposal.pk}/",
        200,
    )

    client.get(f"/incidents/{proposal.incident_id}/")
    incident_line = json_lines()[-1]
    assert incident_line["incident_id"] == proposal.incident_id
    assert "proposal_id" not in incident_line  # each request starts with a clean context


@pytest.mark.django_db
@override_settings(LOG_REQUESTS=True)
def test_it_replaces_an_insane_incoming_request_id(json_lines):
    client = Client()
    for forged in ('a" level="CRITICAL', "x" * 65, "short", "evil\nline"):
        response = client.get("/accounts/login/", HTTP_X_REQUEST_ID=forged)
        assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"]), forged
        assert json_lines()[-1]["request_id"] == response["X-Request-ID"]


@pytest.mark.django_db
@override_settings(LOG_REQUESTS=True)
def test_it_never_logs_a_password_token_or_cookie(json_lines, manager):
    client = Client()
    client.post("/accounts/login/", {"username": manager.username, "password": SECRET})
    client.post(
        "/api/snapshots",
        data="{}",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {SECRET}",
    )
    client.get(f"/accounts/reset/MQ/{SECRET}/")
    client.cookies["sessionid"] = SECRET
    client.get("/")
    text = json_lines.text()
    assert "Unauthorized: /api/snapshots" in text  # Django's own warning is there...
    assert SECRET not in text  # ...and nothing secret
    assert all(line["status"] for line in json_lines() if line["logger"] == "refunds_admin.request")


def test_it_names_the_task_and_its_proposal_on_a_workers_lines():
    signals.task_prerun.send(
        sender=post_proposal, task_id="t-1", task=post_proposal, args=(42,), kwargs={}
    )
    try:
        assert logs.current() == {
            "task": "ledger.post_proposal",
            "task_id": "t-1",
            "proposal_id": 42,
        }
    finally:
        signals.task_postrun.send(sender=post_proposal, task_id="t-1", task=post_proposal)
    assert logs.current() == {}


def test_a_queued_task_carries_the_id_of_the_request_that_queued_it_in_its_headers():
    from refunds_admin.celery import app

    token = logs.bind(request_id="req-queued-0001", user_id=5)
    try:
        headers = {"id": "t-2", "task": "ledger.post_proposal"}
        signals.before_task_publish.send(sender="ledger.post_proposal", headers=headers)
    finally:
        logs.unbind(token)
    assert headers["request_id"] == "req-queued-0001"
    # Queued by no request (beat, a management command): no id is made up.
    headers = {"id": "t-3", "task": "ops.heartbeat"}
    signals.before_task_publish.send(sender="ops.heartbeat", headers=headers)
    assert "request_id" not in headers

    # On the worker, the header is the task's request id; it goes when the task ends.
    task = app.tasks["ledger.post_proposal"]
    task.push_request(request_id="req-queued-0001", id="t-2")
    try:
        signals.task_prerun.send(sender=task, task_id="t-2", task=task, args=(42,), kwargs={})
        assert logs.current()["request_id"] == "req-queued-0001"
        assert logs.current()["proposal_id"] == 42
        signals.task_postrun.send(sender=task, task_id="t-2", task=task)
    finally:
        task.pop_request()
    assert logs.current() == {}


@pytest.fixture
def in_process(monkeypatch):
    """`make run` without REDIS_URL: tasks run inside the request. Their modules are imported
    first, as the first in-process task does: Celery sets Django up once more then, whose
    logging setup replaces the handlers (json_lines' among them)."""
    from refunds_admin.celery import app
    from refunds_admin.jobs import runtime

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    runtime._import_tasks(app)


@pytest.mark.django_db(transaction=True)
def test_a_task_run_in_process_logs_with_the_request_that_ran_it(
    in_process, json_lines, support, manager
):
    from tests.support.factories import submitted_proposal

    proposal = submitted_proposal(support)
    client = Client()
    client.force_login(manager)
    response = approve_on_page(client, proposal, manager, HTTP_X_REQUEST_ID="approval-in-process-1")
    assert response.status_code == 302, response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "posted"
    posting = [line for line in json_lines() if line.get("task") == "ledger.post_proposal"]
    assert posting, "the posting task logged nothing"
    assert {line["request_id"] for line in posting} == {"approval-in-process-1"}
    assert {line["proposal_id"] for line in posting} == {proposal.pk}
