"""Playwright (sync API) driving Debian's chromium against pytest-django's live server.

Playwright runs an event loop in this thread; Django refuses ORM calls from a thread with a
running loop unless told it is safe, which it is here (one test, one thread at a time).
"""

import os
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

from refunds_admin.accounts import mfa
from tests.support.factories import dumps, sunday_major_doc, totp_code

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# The journeys photograph the main screens. They refresh the committed pictures in
# docs/screenshots/ only when asked (`make screenshots`, with PostgreSQL and Redis set), so that
# an ordinary test run leaves the work tree clean; otherwise they go to test-results/.
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = (
    ROOT / "docs" / "screenshots"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1"
    else ROOT / "test-results" / "screenshots"
)
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    )
    yield browser
    browser.close()
    playwright.stop()


@pytest.fixture(autouse=True)
def _live_database(transactional_db):
    """The live server's thread must see committed rows, so these tests use a transactional
    database, which is emptied after each test: put back the role groups the data migration
    created."""
    from django.contrib.auth.models import Group

    from refunds_admin.accounts.roles import ROLES

    for role in ROLES:
        Group.objects.get_or_create(name=role)


# Every page also reports Content-Security-Policy violations through this listener (it is
# injected by the browser itself, so the policy does not apply to it), besides Chromium's own
# "Refused to ..." console message.
_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline")
    + " at " + e.documentURI + (e.sample ? " (" + e.sample + ")" : ""));
});
"""


def is_csp_violation(text):
    return "Content Security Policy" in text or text.startswith("CSP violation")


def watch_csp(context, violations):
    """Collect every CSP violation any page of `context` reports in its console."""
    context.add_init_script(_CSP_LISTENER)
    context.on(
        "console",
        lambda msg: (
            violations.append(f"{msg.page.url if msg.page else '?'}: {msg.text}")
            if is_csp_violation(msg.text)
            else None
        ),
    )


@pytest.fixture
def csp_violations():
    """The CSP violations seen by the pages of `open_as`; the test fails if any remain.

    Wait with locators (`expect(...)`), not `page.wait_for_function("...")`: Playwright polls
    that string with eval(), which the policy refuses, and the refusal is reported here."""
    violations = []
    yield violations
    assert not violations, "Content-Security-Policy violations:\n" + "\n".join(violations)


# Accessibility: axe-core 4 (shipped by axe-playwright-python) runs on every page a journey
# visits. A critical or serious violation fails the test; moderate and minor ones are left to
# judgement. At the end of each test, every page address a person loaded (searches, sorts and
# filters are in the address) is opened again in their context and checked as it is then; a
# test may also call check_axe(page) at a moment of its own. The check runs in a page of its
# own: opening one mid-journey disturbs the journey's next click (the search field loses focus
# and htmx fires), so the journeys check at their end.
AXE_IMPACTS_THAT_FAIL = ("critical", "serious")
# Text contrast (a "serious" finding) is checked in whichever colour scheme the page shows: the
# light one, or the dark one of palette.css when the page emulates prefers-color-scheme: dark
# (`page.emulate_media(color_scheme="dark")`, see test_dark_mode.py). Named here so that it
# stays on whatever axe's defaults become.
AXE_OPTIONS = {"resultTypes": ["violations"], "rules": {"color-contrast": {"enabled": True}}}


def color_scheme(page):
    """ "dark" or "light": the scheme the page's CSS sees now."""
    return (
        "dark" if page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") else "light"
    )


def axe_findings(page):
    """The critical and serious axe-core violations on `page` now, one line each, naming the
    colour scheme they were found in."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options=AXE_OPTIONS)
    scheme = color_scheme(page)
    return [
        f"{page.url} ({scheme}): {v['id']} ({v['impact']}) {v['help']}: "
        + "; ".join(" ".join(node["target"]) for node in v["nodes"][:5])
        for v in results.response["violations"]
        if v["impact"] in AXE_IMPACTS_THAT_FAIL
    ]


def axe_findings_in_both_schemes(page):
    """axe on `page` as it is now in the light scheme and in the dark one; the page is left
    in the scheme it was in."""
    before = color_scheme(page)
    findings = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        findings += axe_findings(page)
    page.emulate_media(color_scheme=before)
    return findings


@pytest.fixture
def axe_violations():
    """The axe findings of the pages of `open_as`; the test fails if any remain."""
    findings = []
    yield findings
    assert not findings, "Accessibility (axe-core) violations:\n" + "\n".join(
        dict.fromkeys(findings)
    )


def check_axe(page):
    """Run axe-core on the page's address as it is now (search, sort and filters are in the
    address), in a page of its own: axe scrolls and focuses while it checks, which would
    disturb the journey's next click. Findings fail the test at its end."""
    sink = getattr(page, "axe_findings", None)
    if sink is None:
        return
    checker = page.context.new_page()
    try:
        try:
            response = checker.goto(page.url)
        except PlaywrightError:
            response = None
        if response is not None and response.ok:
            sink.extend(axe_findings(checker))
    finally:
        checker.close()


@pytest.fixture
def open_as(browser, live_server, transactional_db, csp_violations, axe_violations):
    """open_as(user) -> a signed-in page (one browser context per person, like two desks).
    Any Content-Security-Policy violation on any of its pages fails the test, and so does any
    critical or serious accessibility violation (axe-core) on any page it loaded.
    open_as(user, color_scheme="dark"): a person whose browser prefers the dark scheme; their
    pages are checked by axe (colour contrast included) in the dark scheme."""
    contexts = []
    visited = []

    def _open(user, color_scheme="light"):
        context = browser.new_context(
            base_url=live_server.url,
            viewport={"width": 1360, "height": 900},
            timezone_id="UTC",
            color_scheme=color_scheme,
        )
        context.set_default_timeout(15000)
        watch_csp(context, csp_violations)
        contexts.append(context)
        page = context.new_page()
        # Irreversible steps ask first (window.confirm): a person says yes (`page.say_yes =
        # False` to say no). The questions are kept for the tests (`page.confirmations`).
        questions = []
        page.say_yes = True

        def answer(dialog, page=page):
            questions.append(dialog.message)
            dialog.accept() if page.say_yes else dialog.dismiss()

        page.on("dialog", answer)
        page.confirmations = questions
        page.axe_findings = axe_violations
        page.on("load", lambda page=page: visited.append((context, page.url)))
        page.goto("/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", "pw-" + user.username)
        page.click("button:has-text('Sign in')")
        if mfa.confirmed_device(user) is not None:
            # Managers' second step: the code from their authenticator app.
            page.wait_for_url("**/accounts/two-factor/verify/**")
            page.fill("#id_code", totp_code(user))
            page.click("button:has-text('Verify')")
        page.wait_for_url(live_server.url + "/")
        return page

    yield _open
    # Every page address loaded, opened again (GET) in the same person's context and checked.
    seen = set()
    for context, url in visited:
        if (
            url in seen
            or "/accounts/logout" in url
            or url.endswith((".csv", ".xlsx", ".json", ".svg"))
        ):
            continue
        seen.add(url)
        checker = context.new_page()
        try:
            response = checker.goto(url)
        except PlaywrightError:
            # An address only a form's POST answers (it renders its result in place, no
            # redirect): a GET of it is refused, so that result is not checked again.
            response = None
        if response is not None and response.ok:
            axe_violations.extend(axe_findings(checker))
        checker.close()
    for context in contexts:
        context.close()


def shot(page, name, max_height=1500):
    """Save <name>.png in SCREENSHOTS: the page from the top, at most `max_height` pixels."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # From the top: a page left scrolled by the last click comes out of a full-page screenshot
    # with Chromium's mouse coordinates off by the scroll, and the next click lands beside its
    # target.
    page.evaluate("window.scrollTo(0, 0)")
    height = min(page.evaluate("document.documentElement.scrollHeight"), max_height)
    scrolled = page.evaluate("window.scrollY")
    page.screenshot(
        path=str(SCREENSHOTS / f"{name}.png"),
        full_page=True,
        clip={"x": 0, "y": 0, "width": page.viewport_size["width"], "height": height},
    )
    # A full-page screenshot resizes the viewport and back, and Chromium reports another scroll
    # position than the one it goes back to at the next mouse press: a click after it would
    # land beside its target. Scroll back to where the page was, explicitly.
    page.evaluate("y => window.scrollTo(0, y)", scrolled)


def shot_of(locator, name):
    """Save a screenshot of one element (e.g. a player's statement)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def snapshot_file(tmp_path, external_id="UP-2026-BROWSER-1"):
    """The Sunday Major's snapshot (tests.factories.sunday_major_doc) as a file to upload."""
    path = tmp_path / f"{external_id}.json"
    path.write_text(dumps(sunday_major_doc(external_id)))
    return path
