"""Small snapshot builders for engine tests (plain dicts, as a platform would send them)."""

import copy
import json
from pathlib import Path

EXAMPLES = Path(__file__).parent / "data" / "examples"


def example(name):
    scenario = json.loads((EXAMPLES / f"{name}.scenario.json").read_text())
    expected = json.loads((EXAMPLES / f"{name}.expected.json").read_text())
    return scenario, expected


def snapshot(*, entries, prizes=None, buy_in="30.00", fee="3.00", failed_after="00:30:00",
             site_wide=False, currency="USD", chips_in_play=None):  # fmt: skip
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
    return {"entry_id": f"e{n}", "player_id": f"p{n}", "status": "active", "chips": chips}


def out(n, **extra):
    return {"entry_id": f"e{n}", "player_id": f"p{n}", "status": "eliminated", **extra}
