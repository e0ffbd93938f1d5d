"""Where and when a task runs: in-process or on a worker, queued by name, retried.

In-process mode (no REDIS_URL: development, the SQLite part of the tests) runs every task at
once inside the caller (Celery's eager mode); `in_process()` is the one place that decides it.
"""

import logging
from functools import partial

from django.db import transaction

log = logging.getLogger(__name__)

# The queue of periodic and short tasks (sweepers, staff e-mails, heartbeats): served by its own
# worker, so that a sweep never waits behind long postings or batch prepares (README, "Deploying").
PERIODIC_QUEUE = "periodic"
# Long jobs: posting, player statements, batch prepare.
DEFAULT_QUEUE = "celery"


def in_process() -> bool:
    """True when tasks run in the caller's process (no broker): nothing can wait in a queue.
    Read from the Celery app's own setting (CELERY_TASK_ALWAYS_EAGER, set when REDIS_URL is not)."""
    from refunds_admin.celery import app

    return bool(app.conf.task_always_eager)


def enqueue(name: str, *args, countdown: float | None = None, expires: float | None = None) -> bool:
    """Queue the task called `name` (or run it, in-process). Never raises: with the broker down
    the job stays in its table (its own outbox) and its sweeper queues it later. Returns whether
    it was queued (or ran)."""
    from refunds_admin.celery import app

    options = {}
    if countdown is not None:
        options["countdown"] = countdown
    if expires is not None and not in_process():
        options["expires"] = expires
    try:
        if in_process():
            # Run it here and now; the tasks modules may not be imported yet in this process.
            _import_tasks(app)
            app.tasks[name].apply_async(args=args, **options)
        else:
            # By name: the caller needs no import of the task's module (nor of its layer).
            app.send_task(name, args=args, **options)
        return True
    except Exception:
        log.warning("could not queue %s%r; its sweeper queues it later", name, args, exc_info=True)
        return False


def enqueue_once(name: str, *args, within: float) -> bool:
    """As enqueue, at most once per `within` seconds for the same task and arguments (on the
    shared cache): a sweep every few seconds does not queue one stalled job again each time.
    The message expires after `within` too, so at most one waits in the queue. False when one
    was queued within the period (or the broker is down)."""
    from django.core.cache import cache

    key = f"jobs:queued:{name}:{args!r}"
    try:
        if not cache.add(key, 1, timeout=max(1, int(within))):
            return False
    except Exception:  # no shared cache to ask: queue it (claims are compare-and-set)
        pass
    return enqueue(name, *args, expires=within)


_imported: list[bool] = []


def _import_tasks(app):
    if not _imported:
        app.loader.import_default_modules()  # Celery's autodiscovery of every app's tasks.py
        _imported.append(True)


def enqueue_on_commit(name: str, *args) -> None:
    """Queue the task once the caller's transaction commits (a rolled-back change queues
    nothing); at once outside a transaction."""
    transaction.on_commit(partial(enqueue, name, *args), robust=True)


def retry(task, *, countdown: float, exc: BaseException | None = None, max_retries=None):
    """Ask Celery to run the task again after `countdown` seconds (raises celery's Retry). Only
    on a worker: in-process there is nothing to wait in, the caller decides (`in_process()`)."""
    kwargs = {"countdown": countdown}
    if max_retries is not None:
        kwargs["max_retries"] = max_retries
    if exc is not None:
        raise task.retry(exc=exc, **kwargs) from exc
    raise task.retry(**kwargs)


def run_again_in_process(task, args, *, tries: int):
    """In-process: run the task again at once, up to `tries` runs in all; None when used up."""
    if task.request.retries + 1 >= tries:
        return None
    return task.apply(args=args, retries=task.request.retries + 1).get()
