"""A heartbeat from a thread while a long step runs (a 100k-entry tournament's prepare takes
longer than a heartbeat period): the job is stalled only when its worker is really gone."""

import logging
import threading
from contextlib import contextmanager

from django.db import connection

from .runtime import in_process

log = logging.getLogger(__name__)


@contextmanager
def beating(kind, *, every: float, **where):
    """Beat the job matching `where` every `every` seconds until the block ends. In-process
    (no worker, no sweeper) there is nothing to tell; SQLite would lock on a second writer."""
    if in_process() or connection.vendor != "postgresql":
        yield
        return
    stop = threading.Event()

    def loop():
        from django.db import connections

        try:
            while not stop.wait(every):
                try:
                    kind.beat(**where)
                except Exception:  # the database is away: the job's own error says so
                    log.warning("heartbeat of %s %s failed", kind.name, where, exc_info=True)
                    connections["default"].close()
        finally:
            connections.close_all()  # this thread's own connection

    thread = threading.Thread(target=loop, name=f"heartbeat-{kind.name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every + 5)
