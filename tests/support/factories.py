"""The one way tests build data: through the services the app uses (import_snapshot,
record_incident, prepare/submit/approve_proposal), so stored documents and rows always agree.

The standard tournament: 10 entries, 4 of them still active (chips 40,000 / 30,000 / 20,000 /
10,000), 3 paid places (500 / 300 / 200 USD), buy-in 30 + fee 3. Failing an hour after the start
selects "not in the money" (4 active > 3 paid places); within 20 minutes, the full refund.
"""

import copy
import json
from datetime import UTC, timedelta
from pathlib import Path

from django.utils import timezone

from refunds_admin.accounts import mfa
from refunds_admin.incidents import services as incidents
from refunds_admin.ledger import posting as ledger
from refunds_admin.payouts.money import format_cents
from refunds_admin.proposals import services as proposals
from refunds_admin.tournaments.models import Snapshot

ACTIVE_CHIPS = [40_000, 30_000, 20_000, 10_000]


def snapshot_doc(
    external_id="T-1",
    *,
    starts_at=None,
    active_chips=None,
    eliminated=6,
    emails=None,
    entry_fields=None,
    **extra,
):
    """The standard tournament; `emails` {entry_id: address}, `entry_fields` {index: {field:
    value}} changes single entries (a hostile screen name, an id with a slash), `extra` the
    tournament's fields."""
    starts_at = starts_at or timezone.now() - timedelta(hours=2)
    chips = active_chips or ACTIVE_CHIPS
    entries = [
        {
            "entry_id": f"e{i + 1}",
            "player_id": f"p{i + 1}",
            "screen_name": f"player{i + 1}",
            "status": "active",
            "chips": c,
        }
        for i, c in enumerate(chips)
    ]
    entries += [
        {
            "entry_id": f"e{len(chips) + i + 1}",
            "player_id": f"p{len(chips) + i + 1}",
            "status": "eliminated",
        }
        for i in range(eliminated)
    ]
    for entry in entries:
        if emails and entry["entry_id"] in emails:
            entry["email"] = emails[entry["entry_id"]]
    for index, fields in (entry_fields or {}).items():
        entries[index].update(fields)
    doc = {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id,
            "name": "$30 + $3 Test Special",
            "currency": "USD",
            "buy_in": "30.00",
            "fee": "3.00",
            "starts_at": starts_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "chips_in_play": sum(chips),
            "prizes": [
                {"place": 1, "amount": "500.00"},
                {"place": 2, "amount": "300.00"},
                {"place": 3, "amount": "200.00"},
            ],
        },
        "entries": entries,
    }
    doc["tournament"].update(extra)
    return doc


def dumps(doc):
    return json.dumps(doc, indent=2) + "\n"


def import_doc(user, doc=None, **kwargs):
    doc = doc or snapshot_doc(**kwargs)
    return incidents.import_snapshot(
        dumps(doc).encode(), acting_user=user, source=Snapshot.Source.UPLOAD
    )


def open_incident(
    user,
    *,
    failed_ago=timedelta(minutes=5),
    cause="server_crash",
    description="game server crashed",
    **kwargs,
):
    """A tournament that started 2 hours ago (or as `doc` says) and failed `failed_ago` ago."""
    tournament = import_doc(user, **kwargs).tournament
    return incidents.record_incident(
        tournament,
        failed_at=timezone.now() - failed_ago,
        cause=cause,
        description=description,
        acting_user=user,
    )


def cancelled_incident(user, **kwargs):
    """Failed 40 minutes ago, not resumed: cancelled by the system when the window passed."""
    incident = open_incident(user, failed_ago=timedelta(minutes=40), **kwargs)
    return incidents.cancel_after_window(incident, acting_user=None)


def draft_proposal(preparer, **kwargs):
    """A draft prepared by `preparer` (support) for a cancelled incident."""
    return proposals.prepare_proposal(cancelled_incident(preparer, **kwargs), acting_user=preparer)


def submitted_proposal(preparer, **kwargs):
    return proposals.submit_proposal(draft_proposal(preparer, **kwargs), acting_user=preparer)


def approved_proposal(preparer, approver, **kwargs):
    """Approved by a second person (a manager), quoting the fingerprint; schedules posting."""
    proposal = submitted_proposal(preparer, **kwargs)
    return proposals.approve_proposal(
        proposal, acting_user=approver, fingerprint=proposal.fingerprint
    )


def posted_proposal(preparer, approver, **kwargs):
    """Approved, then posted by the posting service (what the Celery task runs)."""
    proposal = approved_proposal(preparer, approver, **kwargs)
    ledger.post_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal


# --------------------------------------------------------------------------------------------
# Snapshots whose proposal lines come out exactly as a test needs (posting, the ledger)
# --------------------------------------------------------------------------------------------


def lines_doc(amounts, *, external_id="T-LINES", currency="USD"):
    """A snapshot document whose proposal, once the incident is cancelled, has exactly these
    lines: `amounts` holds one (buy_in_refund, next_prize, chip_equity, fee_refund) tuple in
    cents per entry, for entries e000001, e000002, ... of players p000001, p000002, ...

    The real engine computes them, so only lines the payout rules can produce are possible:
    - no next prize and no chip equity anywhere: the full refund (the failure 10 minutes after
      the start); each entry paid exactly the buy-in and fee it gets back (0 for a freeroll);
    - chip equity but no next prize: "not in the money". Lines with money are the active
      entries (each with some equity, unless no line has any), all-zero lines the eliminated
      ones; one paid place holds the whole pool, and an entry's chips are its equity in cents,
      so each exact share is a whole number of cents;
    - a next prize: "in the money". Every active line has the same next prize and no buy-in
      refund; places 2..N pay the next prize and place 1 also the whole equity pool.
    Rule 2 needs at least two active entries. Raises ValueError for lines no rule produces.
    Use with `approved_proposal(..., doc=lines_doc(...))` (or `import_doc`, `open_incident`...):
    the incident fails 40 minutes ago, so the document starts 50 minutes ago for the full
    refund and 2 hours ago for the others.
    """
    amounts = [tuple(a) for a in amounts]
    if any(len(a) != 4 or min(a) < 0 for a in amounts):
        raise ValueError("each line is (buy_in_refund, next_prize, chip_equity, fee_refund) >= 0")
    with_money = [a for a in amounts if any(a)]
    next_prizes = {a[1] for a in with_money}
    equity = sum(a[2] for a in amounts)
    full_refund = not equity and next_prizes <= {0}
    if not full_refund:
        if len(with_money) < 2:
            raise ValueError("rule 2 needs at least two active entries (lines with money)")
        if equity and any(a[2] == 0 for a in with_money):
            raise ValueError("under rule 2 every active entry gets some chip equity")
        if next_prizes != {0} and (len(next_prizes) > 1 or any(a[0] for a in with_money)):
            raise ValueError("in the money, active entries share one next prize, no buy-in")

    def entry(i, a):
        buy_in, next_prize, chip_equity, fee = a
        ids = {"entry_id": f"e{i:06d}", "player_id": f"p{i:06d}", "screen_name": f"player{i}"}
        if full_refund:  # everyone gets back what they paid; chips do not matter
            return ids | {"status": "active", "chips": 1000, "buy_in_paid": format_cents(buy_in),
                          "fee_paid": format_cents(fee)}  # fmt: skip
        if not any(a):
            return ids | {"status": "eliminated"}
        return ids | {"status": "active", "chips": chip_equity or 1, "buy_in_paid": format_cents(buy_in),
                      "fee_paid": format_cents(fee)}  # fmt: skip

    entries = [entry(i, a) for i, a in enumerate(amounts, start=1)]
    if full_refund:
        prizes = [100_00]
    elif next_prizes == {0}:  # not in the money: the remaining pool is the whole prize table
        prizes = [sum(a[0] for a in with_money) + equity]
    else:  # in the money: places 1..N are the remaining pool, place N the next prize
        (next_prize,) = next_prizes
        prizes = [next_prize + equity] + [next_prize] * (len(with_money) - 1)
    started = timezone.now() - (timedelta(minutes=50) if full_refund else timedelta(hours=2))
    return {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id,
            "name": f"Lines test {external_id}",
            "currency": currency,
            "buy_in": "10.00",
            "fee": "1.00",
            "starts_at": started.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "prizes": [
                {"place": place, "amount": format_cents(amount)}
                for place, amount in enumerate(prizes, start=1)
            ],
        },
        "entries": entries,
    }


def partly_posted_proposal(preparer, approver, *, chunks=1, **kwargs):
    """An approved proposal whose posting job booked its first chunk(s) and stopped there, as a
    worker does between chunks (the job stays running; a worker finishes it later)."""
    proposal = approved_proposal(preparer, approver, **kwargs)
    ledger.post_proposal(proposal.pk, max_chunks=chunks)
    proposal.refresh_from_db()
    return proposal


def many_players(n):
    """snapshot_doc arguments for `n` active entries (players p1..pn) and a prize table large
    enough for the policy to apply: for posting many statements."""
    return {
        "active_chips": [1_000 + 10 * i for i in range(n)],
        "prizes": [
            {"place": 1, "amount": f"{n * 40}.00"},
            {"place": 2, "amount": f"{n * 20}.00"},
            {"place": 3, "amount": f"{n * 10}.00"},
        ],
    }


# --------------------------------------------------------------------------------------------
# The tournaments the pages and the browser journeys show
# --------------------------------------------------------------------------------------------

SUNDAY_SPECIAL_PRIZES = [1200_00, 400_00, 200_00, 100_00, 50_00]


def sunday_special_doc(
    external_id="UP-TEST-1",
    *,
    entries=30,
    active=10,
    starts_at=None,
    prizes=SUNDAY_SPECIAL_PRIZES,
    chips=None,
    awarded=None,
):
    """The "$30 + $3 Sunday Special" the web pages show: entries e000, e001, ... of players
    p000, ... (screen names player000, ...); the first `active` entries are active, entry i with
    `chips(i)` chips ((i + 1) * 1,000 by default). `prizes` in cents, place 1 first. `awarded`
    maps an eliminated entry's index to the prize (cents) the platform says it was awarded.
    Play started at `starts_at` (default: two hours ago)."""
    starts_at = starts_at or timezone.now() - timedelta(hours=2)
    chips = chips or (lambda i: (i + 1) * 1000)
    awarded = awarded or {}

    def entry(i):
        e = {"entry_id": f"e{i:03d}", "player_id": f"p{i:03d}", "screen_name": f"player{i:03d}"}
        if i < active:
            return e | {"status": "active", "chips": chips(i)}
        if i in awarded:
            e["prize_awarded"] = format_cents(awarded[i])
        return e | {"status": "eliminated"}

    return {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id,
            "name": "$30 + $3 Sunday Special",
            "currency": "USD",
            "buy_in": "30.00",
            "fee": "3.00",
            "starts_at": starts_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "prizes": [
                {"place": place, "amount": format_cents(amount)}
                for place, amount in enumerate(prizes, start=1)
            ],
        },
        "entries": [entry(i) for i in range(entries)],
    }


SUNDAY_MAJOR_PRIZES = [5000_00, 2500_00, 1500_00, 1000_00, 800_00, 600_00, 450_00, 350_00, 250_00]


def sunday_major_doc(external_id="UP-2026-BROWSER-1", *, entries=400, active=60, starts_at=None):
    """The "$100 + $9 Sunday Major" of the browser journeys: 400 entries E0000... of players
    P0000... (screen names shark0000...), 60 of them active, 9 paid places; play started two
    hours ago (so an incident 40 minutes ago is past its 30-minute window)."""
    starts_at = starts_at or timezone.now().replace(microsecond=0) - timedelta(hours=2)
    return {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id,
            "name": "$100 + $9 Sunday Major",
            "currency": "USD",
            "buy_in": "100.00",
            "fee": "9.00",
            "starts_at": starts_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "prizes": [
                {"place": place, "amount": format_cents(amount)}
                for place, amount in enumerate(SUNDAY_MAJOR_PRIZES, start=1)
            ],
        },
        "entries": [
            {
                "entry_id": f"E{i:04d}",
                "player_id": f"P{i:04d}",
                "screen_name": f"shark{i:04d}",
                "status": "active" if i < active else "eliminated",
                **({"chips": (i * 7919) % 90000 + 2000} if i < active else {}),
            }
            for i in range(entries)
        ],
    }


# --------------------------------------------------------------------------------------------
# Plain documents for the pure engine (no database): as a platform would send them, with the
# incident in the document, on a fixed day (the engine never reads the clock)
# --------------------------------------------------------------------------------------------

EXAMPLES = Path(__file__).parent.parent / "data" / "examples"


def example(name):
    scenario = json.loads((EXAMPLES / f"{name}.scenario.json").read_text())
    expected = json.loads((EXAMPLES / f"{name}.expected.json").read_text())
    return scenario, expected


def engine_doc(*, entries, prizes=None, buy_in="30.00", fee="3.00", failed_after="00:30:00",
               site_wide=False, currency="USD", chips_in_play=None):  # fmt: skip
    """A tournament-snapshot/1 document with its incident: play started 2026-11-29 18:00 UTC and
    failed `failed_after` ("HH:MM:SS") later."""
    hours, minutes, seconds = failed_after.split(":")
    doc = {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": "T-1",
            "name": "Test",
            "currency": currency,
            "buy_in": buy_in,
            "fee": fee,
            "starts_at": "2026-11-29T18:00:00Z",
            "prizes": prizes or [{"place": 1, "amount": "60.00"}, {"place": 2, "amount": "30.00"}],
        },
        "entries": entries,
        "incident": {
            "failed_at": f"2026-11-29T{18 + int(hours):02d}:{minutes}:{seconds}Z",
            "site_wide_issue": site_wide,
        },
    }
    if chips_in_play is not None:
        doc["tournament"]["chips_in_play"] = chips_in_play
    return copy.deepcopy(doc)


def active(n, chips):
    """An active entry e<n> of player p<n> (for engine_doc)."""
    return {"entry_id": f"e{n}", "player_id": f"p{n}", "status": "active", "chips": chips}


def out(n, **extra):
    """An eliminated entry e<n> of player p<n> (for engine_doc)."""
    return {"entry_id": f"e{n}", "player_id": f"p{n}", "status": "eliminated", **extra}


def enrol_device(user):
    """The user's authenticator app, enrolled as on the enrolment page: a new device confirmed
    with a real code computed from its key."""
    device = mfa.start_enrolment(user)
    return mfa.confirm_device(device, mfa.code_for(device), acting_user=user)


def totp_code(user):
    """A current code of the user's confirmed device that it has not accepted yet (what the
    app shows), computed from the device's key."""
    device = mfa.confirmed_device(user)
    device.refresh_from_db()
    return mfa.code_for(device)


# --------------------------------------------------------------------------------------------
# Outages: one failure, many tournaments
# --------------------------------------------------------------------------------------------

OUTAGE_IDS = ("OUT-1", "OUT-2", "OUT-3")


def outage(user, *, external_ids=OUTAGE_IDS, failed_ago=timedelta(minutes=40), docs=None):
    """An outage of the standard tournaments (one per external id), recorded through the
    service. `docs` maps an external id to extra snapshot_doc() arguments."""
    from refunds_admin.outages import services as outages

    tournaments = [
        import_doc(user, external_id=x, **(docs or {}).get(x, {})).tournament for x in external_ids
    ]
    return outages.record_outage(
        failed_at=timezone.now() - failed_ago,
        cause="server_crash",
        description="Data centre A lost power",
        tournaments=tournaments,
        acting_user=user,
    )


def cancelled_outage(user, **kwargs):
    """An outage whose window passed: every tournament cancelled by `user`."""
    from refunds_admin.outages import services as outages

    return outages.cancel_rest_after_window(outage(user, **kwargs), acting_user=user)


def prepared_outage(preparer, **kwargs):
    """A cancelled outage whose batch prepare ran (in this process): every proposal submitted
    by `preparer`."""
    from refunds_admin.proposals import batches

    cancelled = cancelled_outage(preparer, **kwargs)
    run = batches.start_prepare(cancelled, acting_user=preparer)
    batches.run_prepare(run.pk)
    return cancelled


def approve_outage(outage_, approver, *, only=None):
    """A manager approves (all, or the given proposals of) the outage as reviewed."""
    from refunds_admin.proposals import batches

    shown = batches.review(outage_, only=only)["approvable"]
    seen = {p.pk: p.fingerprint for p in shown}
    return batches.approve_batch(
        outage_,
        seen=seen,
        fingerprint=batches.outage_fingerprint(seen.values()),
        acting_user=approver,
    )


# --------------------------------------------------------------------------------------------
# Cancellation policies
# --------------------------------------------------------------------------------------------


def policy_doc(policy_id="roll-forward-50-50", **changes):
    """A cancellation-policy/1 document: the preset `policy_id` with `changes` applied
    ("full_refund.within_minutes": 10 changes a nested field)."""
    from refunds_admin.payouts.policy import PRESETS

    doc = copy.deepcopy(PRESETS[policy_id].document())
    for path, value in changes.items():
        target = doc
        *parents, last = path.split(".")
        for name in parents:
            target = target[name]
        target[last] = value
    return doc


def proposed_policy_version(proposer, doc=None, **changes):
    from refunds_admin.policies import services as policies

    return policies.propose_policy_version(doc or policy_doc(**changes), acting_user=proposer)


def approved_policy_version(proposer, approver, doc=None, **changes):
    """Proposed by one manager, approved by another with a current code of their app."""
    from refunds_admin.policies import services as policies

    version = proposed_policy_version(proposer, doc, **changes)
    return policies.approve_policy_version(
        version, acting_user=approver, sha256=version.sha256, code=totp_code(approver)
    )


# A progressive knockout (policies.md; examples 11 and 13 are its models): the standard
# tournament at $30 + $10 KO + $3, the bounty on each active head grown by the knockouts made,
# every entry giving its bounties won (paid in 10 x $10 = heads $60 + won $40), one rebuy, and
# two entries paid otherwise than in cash: e1 with ticket TKT-1, e5 with tournament money.
KNOCKOUT_BOUNTIES = {0: ("20.00", "20.00"), 1: ("15.00", "10.00"), 2: ("10.00", "0.00"),
                     3: ("15.00", "10.00")}  # fmt: skip


def knockout_doc(external_id="T-KO", *, paid_with=True, **extra):
    fields = {
        index: {"bounty": bounty, "bounties_won": won}
        for index, (bounty, won) in KNOCKOUT_BOUNTIES.items()
    }
    for index in range(4, 10):
        fields[index] = {"bounties_won": "0.00"}
    fields[1] |= {"rebuys_paid": "30.00", "rebuy_fees_paid": "3.00"}
    if paid_with:
        fields[0]["paid_with"] = [{"method": "ticket", "amount": "43.00", "ticket_id": "TKT-1"}]
        fields[4]["paid_with"] = [
            {"method": "tournament_money", "amount": "20.00"},
            {"method": "cash", "amount": "23.00"},
        ]
    extra.setdefault("bounty", "10.00")
    return snapshot_doc(external_id, entry_fields=fields, **extra)
