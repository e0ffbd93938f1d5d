"""The load of issue 25, for locust (run by bench/bench_load.py, which sets everything up).

Staff browse two 100k-line proposals the way a support desk does during a big cancellation: the
breakdown as it opens, pages further on, sorted, searched by player id and by screen name, the
rows alone as htmx fetches them, the tournament page and the dashboard. API importers post the
snapshots of live tournaments to /api/snapshots with their token, as a platform does while play
goes on. Everything goes through `make serve` (gunicorn, DEBUG=0) as it sits behind the
operator's TLS proxy: each request says X-Forwarded-Proto: https, as the proxy does.

BENCH_LOAD_SETUP names the JSON file bench_load.py wrote (users, token, proposals, snapshots);
BENCH_LOAD_STAFF / BENCH_LOAD_IMPORTERS how many of each (37 and 3).
"""

import itertools
import json
import os
import random
from pathlib import Path

import orjson
from locust import HttpUser, between, task

SETUP = json.loads(Path(os.environ["BENCH_LOAD_SETUP"]).read_text())
HTTPS = {"X-Forwarded-Proto": "https"}  # what the TLS proxy in front of gunicorn says
HTMX_LINES = {"HX-Request": "true", "HX-Target": "lines"}
HTMX_ENTRIES = {"HX-Request": "true", "HX-Target": "entries"}
_staff_numbers = itertools.count()
_importer_numbers = itertools.count()


class StaffUser(HttpUser):
    """A support agent, signed in with a password (no second factor: only managers need one,
    and a manager's browsing costs the same pages)."""

    fixed_count = int(os.environ.get("BENCH_LOAD_STAFF", "37"))
    # Think time between two clicks, in seconds (BENCH_LOAD_THINK="0.5,2.5").
    wait_time = between(*map(float, os.environ.get("BENCH_LOAD_THINK", "0.5,2.5").split(",")))

    def on_start(self):
        self.client.headers.update(HTTPS)
        # Signed in by bench_load.py through the sign-in page before the run (a password hash
        # costs half a second of CPU by design: 37 of them are no part of browsing). With DEBUG
        # off the session cookie is Secure: a browser sends it to the TLS proxy, which passes it
        # on in plain HTTP; this client stands where the proxy does and sends it in the header.
        cookies = SETUP["cookies"]
        self.client.headers["Cookie"] = cookies[next(_staff_numbers) % len(cookies)]
        self.proposal = random.choice(SETUP["proposals"])

    def _breakdown(self, query, name, headers=None):
        url = f"/proposals/{self.proposal['id']}/{query}"
        self.client.get(url, name=name, headers=headers)

    def _position(self):
        return random.randrange(self.proposal["lines"])

    @task(6)
    def breakdown_opening(self):
        # A new proposal now and then, as agents move between the two.
        if random.random() < 0.2:
            self.proposal = random.choice(SETUP["proposals"])
        self._breakdown("", "breakdown, as it opens (paid, largest first)")

    @task(4)
    def breakdown_further_on(self):
        self._breakdown(f"?show=&after={self._position()}", "breakdown, a page further on")

    @task(4)
    def breakdown_rows_htmx(self):
        self._breakdown(
            f"?show=&after={self._position()}", "breakdown rows (htmx partial)", HTMX_LINES
        )

    @task(1)
    def breakdown_last_page(self):
        self._breakdown("?show=&last=1", "breakdown, last page")

    @task(3)
    def breakdown_sorted(self):
        chips = random.randrange(1_000, 200_000)
        sort = random.choice(
            [
                "?sort=chips",
                "?sort=-chips",
                f"?sort=chips&after={chips}.{self._position()}",
                "?sort=-total",
                "?sort=total&last=1",
            ]
        )
        self._breakdown(sort, "breakdown, sorted (chips, total)")

    @task(3)
    def breakdown_search(self):
        n = self._position()
        q = random.choice([f"p{n:07d}", f"e{n:07d}", f"player{n}", f"player{n // 100}"])
        self._breakdown(f"?q={q}", "breakdown, search (player, entry, screen name)")

    @task(1)
    def breakdown_filtered(self):
        show = random.choice(["eliminated", "capped", "active"])
        self._breakdown(f"?show={show}&after={self._position()}", "breakdown, filtered")

    @task(2)
    def tournament_page(self):
        self.client.get(f"/tournaments/{self.proposal['tournament_id']}/", name="tournament page")

    @task(1)
    def tournament_entries_htmx(self):
        self.client.get(
            f"/tournaments/{self.proposal['tournament_id']}/?after={self._position()}",
            name="tournament entries (htmx partial)",
            headers=HTMX_ENTRIES,
        )

    @task(2)
    def dashboard(self):
        self.client.get("/", name="dashboard")


class ApiImporter(HttpUser):
    """A game platform posting the snapshot of a live tournament every few seconds: chips move
    between the active entries from one snapshot to the next (their total stays the same)."""

    fixed_count = int(os.environ.get("BENCH_LOAD_IMPORTERS", "3"))
    wait_time = between(4, 8)

    def on_start(self):
        self.client.headers.update(HTTPS)
        docs = SETUP["live_snapshots"]
        self.doc = json.loads(Path(docs[next(_importer_numbers) % len(docs)]).read_text())
        self.active = [e for e in self.doc["entries"] if e["status"] == "active"]
        self.headers = {
            "Authorization": f"Bearer {SETUP['token']}",
            "Content-Type": "application/json",
        }

    @task
    def post_snapshot(self):
        for _ in range(50):
            winner, loser = random.sample(self.active, 2)
            pot = min(loser["chips"] - 1, random.randrange(1, 5_000))
            winner["chips"] += pot
            loser["chips"] -= pot
        with self.client.post(
            "/api/snapshots",
            data=orjson.dumps(self.doc),
            headers=self.headers,
            name="API: post a snapshot (5k entries)",
            catch_response=True,
        ) as response:
            if response.status_code != 201:
                response.failure(f"{response.status_code}: {response.text[:200]}")
