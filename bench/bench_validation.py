"""What the input bounds of issue 10 cost on a large document (docs/snapshot-limits.md): the whole
parse of a 250k-entry snapshot, and within it the duplicate-key check (the fast colon count, and
json's object_pairs_hook that it avoids)."""

import json
import time

import orjson


def _doc(n=250_000):
    entries = [
        {"entry_id": f"e{i:06d}", "player_id": f"p{i:06d}", "screen_name": f"name{i}",
         "status": "active", "chips": 1000 + i}
        for i in range(n)
    ]  # fmt: skip
    return json.dumps(
        {
            "format": "tournament-snapshot/1",
            "tournament": {
                "external_id": "BENCH-1",
                "name": "bench",
                "currency": "USD",
                "buy_in": "30.00",
                "fee": "3.00",
                "starts_at": "2026-11-29T18:00:00Z",
                "prizes": [{"place": 1, "amount": "100.00"}],
            },
            "entries": entries,
        }  # fmt: skip
    )


def _best(fn, runs=3):
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def bench_bounded_parse_of_250k_entries():
    from refunds_admin.payouts import snapshot

    text = _doc()
    decoded = orjson.loads(text)
    print(f"   document: {len(text) / 2**20:.1f} MB, 250,000 entries")
    print(
        f"   parse_snapshot (all checks):     {_best(lambda: snapshot.parse_snapshot(text)):7.0f} ms"
    )
    print(
        f"   duplicate keys, colon count:     {_best(lambda: snapshot._duplicate_key(text, decoded)):7.0f} ms"
    )
    print(
        f"   duplicate keys, object_pairs:    {_best(lambda: snapshot._find_duplicate(text)):7.0f} ms (avoided)"
    )
