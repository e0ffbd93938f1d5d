import contextvars
import inspect
import os
import re

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")

app = Celery("refunds_admin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# Heartbeats for /healthz (refunds_admin/ops/health.py): beat stamps each heartbeat it sends,
# a worker stamps each task it finishes.
@signals.before_task_publish.connect
def _beat_sent_heartbeat(sender=None, **kwargs):
    if sender == "ops.heartbeat":
        from refunds_admin.ops import health

        health.stamp("beat")


# A task carries the request id of the request that queued it, in its message's headers, so
# that its log lines on the worker can be followed back to the click (README, "Deploying": every
# line carries request_id). A task queued by such a task carries it on; beat's tasks, queued by
# no request, carry none.
REQUEST_ID_HEADER = "request_id"
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


@signals.before_task_publish.connect
def _carry_request_id(headers=None, **kwargs):
    from refunds_admin.ops import logs

    request_id = logs.current().get("request_id")
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


def _queued_by_request(task):
    """The request id a queued task's message carries (None in-process, or from beat)."""
    request_id = getattr(getattr(task, "request", None), REQUEST_ID_HEADER, None)
    # From our own broker, but a log field all the same: an id, never a forged line.
    if isinstance(request_id, str) and _SANE_REQUEST_ID.fullmatch(request_id):
        return request_id
    return None


# Log lines written while a task runs name the task and the proposal/incident it works on.
_tokens: dict[str, contextvars.Token] = {}


@signals.task_prerun.connect
def _bind_task_log_context(task_id=None, task=None, args=None, kwargs=None, **_):
    from refunds_admin.ops import logs

    fields = {"task": getattr(task, "name", None), "task_id": task_id}
    try:
        bound = inspect.signature(task.run).bind_partial(*(args or ()), **(kwargs or {}))
        fields.update(
            {
                k: v
                for k, v in bound.arguments.items()
                if k in ("proposal_id", "incident_id", "outage_id")
            }
        )
    except (TypeError, ValueError):
        pass
    # On a worker: the id of the request that queued it. In-process (no Redis) the task runs
    # inside the request, whose fields (its id among them) it keeps.
    request_id = _queued_by_request(task)
    if request_id:
        fields["request_id"] = request_id
    _tokens[task_id] = logs.bind(**{**logs.current(), **fields})


@signals.task_postrun.connect
def _task_finished(task_id=None, task=None, **_):
    from refunds_admin.ops import health, logs

    token = _tokens.pop(task_id, None)
    if token is not None:
        try:
            logs.unbind(token)
        except ValueError:  # bound in another context (should not happen); nothing to undo
            pass
    health.stamp("worker")
    # And the queue it came from: each queue's worker is seen (or missed) on its own.
    delivery = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    queue = delivery.get("routing_key")
    if queue in health.QUEUES:
        health.stamp(f"queue:{queue}")
