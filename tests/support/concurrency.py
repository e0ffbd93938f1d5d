"""Run callables at the same moment, each in its own thread on its own real database
connection (Django opens one per thread), for the compare-and-set and lock-order tests."""

import threading

from django.core.exceptions import PermissionDenied
from django.db import connections

from refunds_admin.errors import Refused


def at_once(*actions, catch=(Refused, PermissionDenied), timeout=60):
    """Run the actions in threads released together; return what each returned, or raised
    (for the exceptions in `catch`; anything else leaves that outcome None)."""
    barrier = threading.Barrier(len(actions))
    outcomes = [None] * len(actions)

    def run(i, action):
        try:
            barrier.wait()
            outcomes[i] = action()
        except catch as e:
            outcomes[i] = e
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    return outcomes
