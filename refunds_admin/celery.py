import contextvars
import inspect
import os

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
    # Inside a request (tasks in-process without Redis) keep the request's fields too.
    _tokens[task_id] = logs.bind(**{**logs.current(), **fields})


@signals.task_postrun.connect
def _task_finished(task_id=None, **_):
    from refunds_admin.ops import health, logs

    token = _tokens.pop(task_id, None)
    if token is not None:
        try:
            logs.unbind(token)
        except ValueError:  # bound in another context (should not happen); nothing to undo
            pass
    health.stamp("worker")
