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


def platform_token(django_user_model, *, external_ids=()):
    """The API token of a platform client acting as a support user (with the tournaments
    `external_ids` imported), for API calls made from threads: each thread commits on its own
    connection, so a test using it needs the transactional database."""
    from django.contrib.auth.models import Group

    from refunds_admin.tournaments.services import create_api_client
    from tests.support.factories import import_doc

    user = django_user_model.objects.create(username="sue_support")
    user.groups.add(Group.objects.get_or_create(name="support")[0])
    for external_id in external_ids:
        import_doc(user, external_id=external_id)
    return create_api_client("platform", user=user)[1]


def post_json(url, body, token):
    """POST `body` (JSON text) to the API with `token`, from a client of its own: called in a
    thread, the request runs on that thread's own database connection."""
    from django.test import Client

    return Client().post(
        url, data=body, content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip
