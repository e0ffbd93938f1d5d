"""Generate large, valid tournament-snapshot/1 documents for benchmarks (deterministic)."""

import json
import random


def make_snapshot(
    active, eliminated=0, *, in_the_money=False, seed=7, external_id=None, paid=None,
    one_row_per_place=False, chip_leader=False, screen_names="short", reentries=False,
):  # fmt: skip
    """`paid` places (default: one in seven entries; all the active ones when in_the_money);
    `one_row_per_place` writes the prize table as one {"place": n} row per paid place, as some
    platforms export it; `chip_leader` gives the first entry enough chips to hit the first-place
    cap (the hard snapshot of issue 15: 100k active, 200k eliminated, 50k paid places; issue 25
    gives it 10^9 chips); `chip_leader` may also be the leader's chip count.
    `screen_names`: "short" ("player12"), "none" (the field left out) or "long" (128 characters,
    the most accepted, non-ASCII included); `reentries`: every other eliminated entry is an
    earlier entry of a player still active (entries sharing a player_id, as the spec allows)."""
    rng = random.Random(seed)
    total_entries = active + eliminated
    if paid is None:
        paid = max(2, total_entries // 7)
        if in_the_money:
            paid = max(paid, active)
    # A decreasing prize table: first place 20% of the pool, the rest falling off.
    prizes = []
    amount = 2_000_000_00
    for place in range(1, min(paid, 9) + 1):
        prizes.append({"place": place, "amount": f"{amount // 100}.{amount % 100:02d}"})
        amount = amount * 3 // 4
    start = 10
    while start <= paid:
        end = min(paid, start * 2)
        text = f"{amount // 100}.{amount % 100:02d}"
        if one_row_per_place:
            prizes.extend({"place": p, "amount": text} for p in range(start, end + 1))
        else:
            prizes.append({"places": [start, end], "amount": text})
        amount = max(amount * 4 // 5, 10_00)
        start = end + 1
    entries = []
    chips_total = 0
    for i in range(total_entries):
        player = i
        if reentries and i >= active and i % 2 == 0:
            player = (i - active) * 7 % active  # an earlier entry of an active player
        entry = {"entry_id": f"e{i:07d}", "player_id": f"p{player:07d}"}
        if screen_names == "short":
            entry["screen_name"] = f"player{i}"
        elif screen_names == "long":
            entry["screen_name"] = f"Jörg-Æsir {i} " + "x" * 128
            entry["screen_name"] = entry["screen_name"][:128]
        if i < active:
            chips = rng.randint(1_000, 200_000)
            if chip_leader and i == 0:
                # far above everyone: capped at first prize
                chips = 2_000_000_000 if chip_leader is True else chip_leader
            chips_total += chips
            entry.update(status="active", chips=chips)
        else:
            entry.update(status="eliminated", finish_place=total_entries - (i - active))
        entries.append(entry)
    return {
        "format": "tournament-snapshot/1",
        "tournament": {
            "external_id": external_id or f"BENCH-{active}",
            "name": f"Benchmark {active:,} active",
            "currency": "USD",
            "buy_in": "100.00",
            "fee": "9.00",
            "starts_at": "2026-11-29T18:00:00Z",
            "chips_in_play": chips_total,
            "prizes": prizes,
        },
        "entries": entries,
        "incident": {"failed_at": "2026-11-29T21:14:00Z", "site_wide_issue": False},
    }


def make_hard_snapshot(active=100_000, **kwargs):
    """Issue 15's hard snapshot: twice as many eliminated entries as active ones, half as many
    paid places as active entries (one prize row each), and a chip leader held at the cap.
    Issue 25's form of it: make_hard_snapshot(chip_leader=10**9, screen_names="none")."""
    kwargs.setdefault("chip_leader", True)
    return make_snapshot(active, 2 * active, paid=active // 2, one_row_per_place=True, **kwargs)


def write_snapshot(path, *args, **kwargs):
    with open(path, "w") as fh:
        json.dump(make_snapshot(*args, **kwargs), fh)


def make_knockout_snapshot(active, eliminated=0, *, seed=7, external_id=None,
                           policy="roll-forward-50-50", **kwargs):  # fmt: skip
    """make_snapshot's tournament as a progressive knockout ($100 + $50 KO + $9) with rebuys and
    add-ons on a third of the entries and paid_with on another third (tickets, tournament money
    and cash), under `policy` (issue 19's bench: the same size as the plain snapshot)."""
    rng = random.Random(seed + 1)
    doc = make_snapshot(active, eliminated, seed=seed, external_id=external_id, **kwargs)
    t = doc["tournament"]
    t["bounty"] = "50.00"
    t["policy"] = policy
    t["guarantee"] = "10000000.00"
    for i, entry in enumerate(doc["entries"]):
        paid = 100_00 + 9_00 + 50_00
        if i % 3 == 0:
            rebuys = rng.randint(1, 3)
            entry["rebuys_paid"] = f"{rebuys * 100}.00"
            entry["rebuy_fees_paid"] = f"{rebuys * 9}.00"
            paid += rebuys * 109_00
        if entry["status"] == "active":
            # A progressive knockout: each bounty collected adds half of it to the head.
            head = 50_00 + rng.randint(0, 8) * 25_00 + rng.randint(0, 99)
            entry["bounty"] = f"{head // 100}.{head % 100:02d}"
        if i % 3 == 1:
            kind = i % 4
            if kind == 0:
                entry["paid_with"] = [
                    {"method": "ticket", "amount": f"{paid // 100}.{paid % 100:02d}",
                     "ticket_id": f"TKT-{i:07d}"}
                ]  # fmt: skip
            elif kind == 1:
                entry["paid_with"] = [
                    {"method": "tournament_money", "amount": "100.00"},
                    {"method": "cash", "amount": f"{(paid - 100_00) // 100}.{paid % 100:02d}"},
                ]
            else:
                entry["paid_with"] = [
                    {"method": "cash", "amount": f"{paid // 100}.{paid % 100:02d}"}
                ]
    return doc
