# mypy: ignore-errors
"""TEMPORARY: the engine's policy interface (ENGINE-CONTRACT.md, payouts/policy.py) until it is
merged into main; then every import of this module becomes `refunds_admin.payouts.policy` and
this file is deleted."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

try:  # the real engine, once merged
    from refunds_admin.payouts.policy import (  # type: ignore[import-not-found]
        DEFAULT_POLICY_ID,
        PRESETS,
        Policy,
        PolicyError,
        parse_policy,
    )
except ImportError:  # pragma: no cover - replaced by the engine
    from refunds_admin.payouts.snapshot import Problem

    DEFAULT_POLICY_ID = "ultimatepoker-2026"

    class PolicyError(ValueError):  # type: ignore[no-redef]
        def __init__(self, problems: list[Problem]):
            self.problems = problems
            super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))

    class PolicyRef(NamedTuple):
        id: str
        version: int
        sha256: str

    @dataclass(frozen=True)
    class Policy:  # type: ignore[no-redef]
        id: str
        version: int
        title: str
        management_finding: str
        within_minutes: int | None
        before_first_elimination: bool
        not_in_the_money_returned: str
        not_in_the_money_equal_share_percent: int
        in_the_money_equal_share_percent: int
        first_place_cap: bool
        overlay: str
        refund_form: str

        def document(self) -> dict[str, Any]:
            return {
                "format": "cancellation-policy/1",
                "id": self.id,
                "version": self.version,
                "title": self.title,
                "management_finding": self.management_finding,
                "full_refund": {
                    "within_minutes": self.within_minutes,
                    "before_first_elimination": self.before_first_elimination,
                },
                "not_in_the_money": {
                    "returned": self.not_in_the_money_returned,
                    "equal_share_percent": self.not_in_the_money_equal_share_percent,
                },
                "in_the_money": {"equal_share_percent": self.in_the_money_equal_share_percent},
                "first_place_cap": self.first_place_cap,
                "overlay": self.overlay,
                "refund_form": self.refund_form,
            }

        def canonical_json(self) -> bytes:
            return json.dumps(
                self.document(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode("utf-8")

        @property
        def sha256(self) -> str:
            return hashlib.sha256(self.canonical_json()).hexdigest()

        @property
        def ref(self) -> PolicyRef:
            return PolicyRef(self.id, self.version, self.sha256)

    _ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

    def parse_policy(doc: bytes | str | dict[str, Any]) -> Policy:  # type: ignore[no-redef]
        problems: list[Problem] = []
        if isinstance(doc, (bytes, str)):
            try:
                doc = json.loads(doc)
            except ValueError as e:
                raise PolicyError([Problem("document", f"not JSON: {e}")]) from None
        if not isinstance(doc, dict):
            raise PolicyError([Problem("document", "must be a JSON object")])
        shape = {
            "format": None, "id": None, "version": None, "title": None,
            "management_finding": None, "full_refund": {"within_minutes", "before_first_elimination"},
            "not_in_the_money": {"returned", "equal_share_percent"},
            "in_the_money": {"equal_share_percent"}, "first_place_cap": None, "overlay": None,
            "refund_form": None,
        }  # fmt: skip
        for key in doc:
            if key not in shape:
                problems.append(Problem(key, "unknown field"))
        for key, inner in shape.items():
            if key not in doc:
                problems.append(Problem(key, "is required"))
            elif inner is not None:
                if not isinstance(doc[key], dict):
                    problems.append(Problem(key, "must be an object"))
                    continue
                for k in doc[key]:
                    if k not in inner:
                        problems.append(Problem(f"{key}.{k}", "unknown field"))
                for k in inner:
                    if k not in doc[key]:
                        problems.append(Problem(f"{key}.{k}", "is required"))
        if problems:
            raise PolicyError(problems)

        def check(field: str, ok: bool, message: str) -> None:
            if not ok:
                problems.append(Problem(field, message))

        def is_int(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        fr, nitm, itm = doc["full_refund"], doc["not_in_the_money"], doc["in_the_money"]
        check("format", doc["format"] == "cancellation-policy/1", "must be cancellation-policy/1")
        check(
            "id",
            isinstance(doc["id"], str) and bool(_ID.match(doc["id"])),
            "must match ^[a-z0-9][a-z0-9-]{0,62}$",
        )
        check("version", is_int(doc["version"]) and doc["version"] >= 1, "must be an integer >= 1")
        for f in ("title", "management_finding"):
            check(f, isinstance(doc[f], str) and bool(doc[f].strip()), "must be non-empty text")
        w = fr["within_minutes"]
        check(
            "full_refund.within_minutes",
            w is None or (is_int(w) and w >= 0),
            "must be an integer >= 0 or null",
        )
        check(
            "full_refund.before_first_elimination",
            isinstance(fr["before_first_elimination"], bool),
            "must be true or false",
        )
        check(
            "not_in_the_money.returned",
            nitm["returned"] in ("buy_in_and_rebuys", "buy_in", "nothing"),
            "must be buy_in_and_rebuys, buy_in or nothing",
        )
        for f, v in (
            ("not_in_the_money.equal_share_percent", nitm["equal_share_percent"]),
            ("in_the_money.equal_share_percent", itm["equal_share_percent"]),
        ):
            check(f, is_int(v) and 0 <= v <= 100, "must be an integer from 0 to 100")
        check("first_place_cap", isinstance(doc["first_place_cap"], bool), "must be true or false")
        check(
            "overlay",
            doc["overlay"] in ("paid", "returned_to_house"),
            "must be paid or returned_to_house",
        )
        check("refund_form", doc["refund_form"] in ("as_paid", "cash"), "must be as_paid or cash")
        if problems:
            raise PolicyError(problems)
        return Policy(
            id=doc["id"], version=doc["version"], title=doc["title"],
            management_finding=doc["management_finding"], within_minutes=w,
            before_first_elimination=fr["before_first_elimination"],
            not_in_the_money_returned=nitm["returned"],
            not_in_the_money_equal_share_percent=nitm["equal_share_percent"],
            in_the_money_equal_share_percent=itm["equal_share_percent"],
            first_place_cap=doc["first_place_cap"], overlay=doc["overlay"],
            refund_form=doc["refund_form"],
        )  # fmt: skip

    _ROLL = "Management chose to roll the tournament back"

    def _preset(pid, title, finding, within, before, returned, nitm_s, itm_s, cap, overlay):  # type: ignore[no-untyped-def]
        return Policy(
            pid, 1, title, finding, within, before, returned, nitm_s, itm_s, cap, overlay, "as_paid"
        )

    PRESETS = {  # type: ignore[no-redef]
        p.id: p
        for p in (
            _preset("ultimatepoker-2026", "UltimatePoker.com tournament cancellation policy",
                    "General site issues impaired player performance throughout", 20, False,
                    "buy_in_and_rebuys", 0, 0, True, "paid"),
            _preset("roll-forward-50-50", "Roll forward: fee back, 50% equal, 50% by chips", _ROLL,
                    None, False, "nothing", 50, 0, False, "paid"),
            _preset("rollback-before-first-bust", "Roll back before the first elimination", _ROLL,
                    None, True, "nothing", 50, 0, False, "returned_to_house"),
            _preset("buy-in-back-50-50", "First buy-in back, rest 50% equal, 50% by chips", _ROLL,
                    None, False, "buy_in", 50, 50, False, "paid"),
        )
    }  # fmt: skip

__all__ = ["DEFAULT_POLICY_ID", "PRESETS", "Policy", "PolicyError", "parse_policy"]


def parse_snapshot_knowing(doc: Any, known: set[str]) -> Any:  # TEMPORARY, see module doc
    """`parse_snapshot(doc, known_policies=known)` once the engine takes it."""
    import inspect

    from refunds_admin.payouts import parse_snapshot

    if "known_policies" in inspect.signature(parse_snapshot).parameters:
        return parse_snapshot(doc, known_policies=known)
    return parse_snapshot(doc)


def with_policy(fn: Any, *args: Any, policy: Any, **kwargs: Any) -> Any:  # TEMPORARY
    """`fn(*args, policy=policy, **kwargs)` once the engine's compute_proposal/select_rule take
    `policy=`; before that, the engine applies its one (the default) policy."""
    import inspect

    if "policy" in inspect.signature(fn).parameters:
        return fn(*args, policy=policy, **kwargs)
    return fn(*args, **kwargs)
