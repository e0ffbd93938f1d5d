"""The app's own pages satisfy its Content-Security-Policy: no inline script, style or handler.

Each role signs in and walks every page it can reach by following links from the dashboard
(tournaments, incidents, proposals in every state, approval, statements, audit, player lookup,
the forms), in a real Chromium. `open_as` fails the test on any violation in the console; the
canary test proves that a violation is seen. Support walks with a browser that prefers the dark
colour scheme, so axe checks their pages in dark mode.
"""

import os
import re
from collections import deque
from datetime import timedelta
from urllib.parse import urldefrag, urlsplit

import pytest
from playwright.sync_api import expect

from tests.support.factories import (
    approved_proposal,
    open_incident,
    submitted_proposal,
    sunday_major_doc,
)

from .conftest import is_csp_violation, watch_csp
from .helpers import wait_until_posted

pytestmark = pytest.mark.browser

MAX_PAGES = 80  # per role
# Pages of one kind ("/proposals/*/statement/*/", any query string): enough to see each object
# in each state the data has, not every row of every list.
SAME_KIND = 3
SKIP = ("/accounts/logout/", "/admin/")
DOWNLOADS = (".csv", ".xlsx", ".json")


def _links(page, origin, skip):
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
    for href in hrefs:
        url = urldefrag(href).url
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != origin:
            continue
        if parts.path.startswith(skip) or parts.path.endswith(DOWNLOADS):
            continue
        yield parts.path + (f"?{parts.query}" if parts.query else "")


def _kind(url):
    return re.sub(r"/[^/]*\d[^/]*(?=/)", "/*", url.split("?", 1)[0])


def crawl(page, origin, start="/", max_pages=MAX_PAGES, skip=SKIP):
    """Breadth-first over the same-origin links from `start`; returns the paths seen."""
    seen, per_kind, queue = set(), {}, deque([start])
    while queue and len(seen) < max_pages:
        url = queue.popleft()
        if url in seen or per_kind.get(_kind(url), 0) >= SAME_KIND:
            continue
        seen.add(url)
        per_kind[_kind(url)] = per_kind.get(_kind(url), 0) + 1
        response = page.goto(url)
        assert response is not None and response.status < 500, (url, response and response.status)
        # Let htmx finish what the page loads on its own (hx-trigger="load" and the like).
        # (A locator wait: wait_for_function's eval() would itself break the policy.)
        expect(page.locator(".htmx-request")).to_have_count(0, timeout=5000)
        if "html" in (response.headers.get("content-type") or ""):
            queue.extend(u for u in _links(page, origin, skip) if u not in seen)
    return {url.split("?", 1)[0] for url in seen}


@pytest.fixture
def every_state(support, other_manager, request):
    """Tournaments at every step: an open incident, a submitted proposal, a posted one."""
    if os.environ.get("REDIS_URL"):
        request.getfixturevalue("celery_worker_process").start()
    open_incident(support, failed_ago=timedelta(minutes=12), doc=sunday_major_doc("CSP-OPEN"))
    submitted = submitted_proposal(support, doc=sunday_major_doc("CSP-SUBMITTED"))
    posted = approved_proposal(support, other_manager, doc=sunday_major_doc("CSP-POSTED"))
    wait_until_posted(posted)
    return submitted, posted


def test_it_shows_every_page_of_every_role_without_a_csp_violation(
    open_as, live_server, every_state, support, manager, auditor, csp_violations
):
    submitted, posted = every_state
    visited = {}
    for user in (support, manager, auditor):
        # Support's browser prefers the dark scheme: every page they reach is also checked by
        # axe (colour contrast included) in dark mode; the others' pages in the light one.
        page = open_as(user, color_scheme="dark" if user == support else "light")
        visited[user.username] = crawl(page, live_server.url)

    expected = {
        "/",
        "/tournaments/",
        "/tournaments/import/",
        "/incidents/new/",
        "/audit/",
        "/players/",
        f"/proposals/{submitted.pk}/",
        f"/proposals/{posted.pk}/",
    }
    assert expected <= visited[support.username], visited[support.username]
    assert f"/proposals/{submitted.pk}/approval/" in visited[manager.username]
    assert f"/incidents/{submitted.incident_id}/" in visited[auditor.username]
    assert any("/statement/" in path for path in visited[auditor.username])
    assert not csp_violations  # (open_as checks again once the pages are closed)


def test_it_sees_a_violation_when_a_page_breaks_the_policy(browser, live_server, transactional_db):
    """The detector works: a page on the app's origin, with the app's own policy, that has an
    inline style, an inline handler and an inline script is reported three times."""
    import urllib.request

    policy = urllib.request.urlopen(live_server.url + "/accounts/login/").headers[
        "Content-Security-Policy"
    ]
    assert policy and "script-src 'self'" in policy
    context = browser.new_context(base_url=live_server.url)
    violations = []
    watch_csp(context, violations)
    page = context.new_page()
    page.route(
        "**/csp-canary/",
        lambda route: route.fulfill(
            status=200,
            headers={"Content-Type": "text/html", "Content-Security-Policy": policy},
            body='<p style="color:red" onclick="void 0">x</p><script>document.title="ran"</script>',
        ),
    )
    try:
        page.goto("/csp-canary/")
        page.click("p")
        page.wait_for_timeout(300)
        assert page.title() != "ran"  # the inline script was blocked
    finally:
        context.close()
    assert all(is_csp_violation(v.split(": ", 1)[1]) for v in violations)
    directives = " ".join(violations)
    assert "style-src" in directives and "script-src" in directives
    assert len({v for v in violations if v.split(": ", 1)[1].startswith("CSP violation")}) >= 3


def test_it_shows_the_admin_to_a_superuser_without_a_csp_violation(
    browser, live_server, superuser, every_state, csp_violations
):
    """The superuser's pages are Django's admin: its list, change and history pages keep to
    the same policy (its sign-in asks for the authenticator code too)."""
    from tests.support.factories import totp_code

    context = browser.new_context(base_url=live_server.url)
    watch_csp(context, csp_violations)
    try:
        page = context.new_page()
        page.goto("/admin/login/")
        page.fill("#id_username", "root")
        page.fill("#id_password", "pw-root")
        page.fill("#id_otp_token", totp_code(superuser))
        page.click("input[type=submit]")
        page.wait_for_url(live_server.url + "/admin/")
        seen = crawl(page, live_server.url, start="/admin/", max_pages=25, skip=("/admin/logout/",))
        submitted, _ = every_state
        page.goto(f"/admin/proposals/payoutproposal/{submitted.pk}/change/")
        page.goto("/admin/auth/user/add/")
    finally:
        context.close()
    assert "/admin/auth/user/" in seen and len(seen) >= 20, seen
