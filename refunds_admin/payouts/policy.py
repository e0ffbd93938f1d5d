"""A cancellation policy as data: the `cancellation-policy/1` document of policies.md.

A policy says which rule applies (the full-refund window, before the first elimination,
management's finding), what an active entry is guaranteed before the money, how much of the
equity pool is shared equally, whether first prize caps anyone, who keeps a guarantee's overlay,
and in which form a full refund goes back. The engine reads only these fields; the words
(`title`, `management_finding`) are what staff and players see.

A policy is identified by its id, version and the SHA-256 of its canonical JSON (keys sorted, no
spaces, UTF-8): the proposal records all three, and the fingerprint covers the hash.

The shipped presets are files beside this module (`policies/<id>.json`), loaded as version 1.
"""

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from .money import json_type
from .snapshot import Problem

FORMAT = "cancellation-policy/1"
DEFAULT_POLICY_ID = "ultimatepoker-2026"

RETURNED = ("buy_in_and_rebuys", "buy_in", "nothing")
OVERLAY = ("paid", "returned_to_house")
REFUND_FORM = ("as_paid", "cash")
POLICY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
MAX_TEXT = 500  # title and management_finding: a sentence, shown on every screen
MAX_VERSION = 2**31 - 1
MAX_MINUTES = 2**31 - 1
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class PolicyError(ValueError):
    """The policy document is refused. `problems` names every field that is wrong."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(str(self))

    def __str__(self) -> str:
        return "; ".join(str(p) for p in self.problems)


class PolicyRef(NamedTuple):
    """What a proposal records of its policy: the version it was computed under."""

    id: str
    version: int
    sha256: str


@dataclass(frozen=True)
class Policy:
    id: str
    version: int
    title: str
    management_finding: str
    within_minutes: int | None  # rule 1 when elapsed <= this many minutes; None: no window
    before_first_elimination: bool  # rule 1 also when no entry is eliminated
    not_in_the_money_returned: str  # "buy_in_and_rebuys" | "buy_in" | "nothing"
    not_in_the_money_equal_share_percent: int
    in_the_money_equal_share_percent: int
    first_place_cap: bool
    overlay: str  # "paid" | "returned_to_house"
    refund_form: str  # "as_paid" | "cash"

    def document(self) -> dict[str, Any]:
        """The `cancellation-policy/1` document."""
        return {
            "format": FORMAT,
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
        """Keys sorted, no spaces, UTF-8 (non-ASCII written as it is): what the hash covers."""
        return _canonical(self.document())

    @cached_property
    def sha256(self) -> str:
        import hashlib  # here, not at the top: compute_payouts starts faster without OpenSSL

        return hashlib.sha256(self.canonical_json()).hexdigest()

    @property
    def ref(self) -> PolicyRef:
        return PolicyRef(self.id, self.version, self.sha256)

    def equal_share_percent(self, in_the_money: bool) -> int:
        if in_the_money:
            return self.in_the_money_equal_share_percent
        return self.not_in_the_money_equal_share_percent


def _canonical(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# field -> (kind, allowed values) for the nested objects; kinds checked by _value.
_TOP = ("format", "id", "version", "title", "management_finding", "full_refund",
        "not_in_the_money", "in_the_money", "first_place_cap", "overlay", "refund_form")  # fmt: skip
_NESTED = {
    "full_refund": ("within_minutes", "before_first_elimination"),
    "not_in_the_money": ("returned", "equal_share_percent"),
    "in_the_money": ("equal_share_percent",),
}


def parse_policy(doc: bytes | bytearray | str | Mapping[str, Any]) -> Policy:
    """A `cancellation-policy/1` document -> Policy. Raises PolicyError naming each wrong field
    (`full_refund.within_minutes`): an unknown field, a missing one, a value outside the table."""
    if isinstance(doc, (bytes, bytearray)):
        try:
            doc = bytes(doc).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PolicyError([Problem("policy", f"is not UTF-8 text ({exc.reason})")]) from None
    if isinstance(doc, str):
        duplicate: list[str] = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            if len(set(keys)) != len(keys) and not duplicate:
                duplicate.append(next(k for k in keys if keys.count(k) > 1))
            return dict(items)

        try:
            doc = json.loads(doc, object_pairs_hook=pairs)
        except (ValueError, RecursionError) as exc:
            raise PolicyError([Problem("policy", f"is not valid JSON ({exc})")]) from None
        if duplicate:
            raise PolicyError([Problem(duplicate[0], "is given twice; each field may appear once")])
    if not isinstance(doc, Mapping):
        raise PolicyError(
            [Problem("policy", f"must be a JSON object, not a JSON {json_type(doc)}")]
        )
    problems: list[Problem] = []
    add = problems.append

    for key in doc:
        if key not in _TOP:
            add(Problem(str(key), "is not a field of cancellation-policy/1"))
    for key in _TOP:
        if key not in doc:
            add(Problem(key, "is required"))
    fmt = doc.get("format")
    if "format" in doc and fmt != FORMAT:
        add(Problem("format", f"must be {FORMAT!r}, not {_shown(fmt)}"))

    policy_id = doc.get("id")
    if "id" in doc and not (isinstance(policy_id, str) and POLICY_ID.fullmatch(policy_id)):
        add(
            Problem(
                "id",
                "must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter "
                f"or digit, not {_shown(policy_id)}",
            )
        )
    version = doc.get("version")
    if "version" in doc:
        _whole(version, "version", 1, MAX_VERSION, problems)
    for key in ("title", "management_finding"):
        if key in doc:
            _text(doc[key], key, problems)
    for key in ("first_place_cap",):
        if key in doc:
            _boolean(doc[key], key, problems)
    for key, allowed in (("overlay", OVERLAY), ("refund_form", REFUND_FORM)):
        if key in doc:
            _choice(doc[key], key, allowed, problems)

    nested: dict[str, Mapping[str, Any]] = {}
    for section, keys in _NESTED.items():
        if section not in doc:
            continue
        value = doc[section]
        if not isinstance(value, Mapping):
            add(Problem(section, f"must be a JSON object, not a JSON {json_type(value)}"))
            continue
        nested[section] = value
        for key in value:
            if key not in keys:
                add(Problem(f"{section}.{key}", "is not a field of cancellation-policy/1"))
        for key in keys:
            if key not in value:
                add(Problem(f"{section}.{key}", "is required"))
    full = nested.get("full_refund", {})
    if "within_minutes" in full and full["within_minutes"] is not None:
        _whole(full["within_minutes"], "full_refund.within_minutes", 0, MAX_MINUTES, problems)
    if "before_first_elimination" in full:
        _boolean(full["before_first_elimination"], "full_refund.before_first_elimination", problems)
    before = nested.get("not_in_the_money", {})
    if "returned" in before:
        _choice(before["returned"], "not_in_the_money.returned", RETURNED, problems)
    for section in ("not_in_the_money", "in_the_money"):
        part = nested.get(section, {})
        if "equal_share_percent" in part:
            _whole(part["equal_share_percent"], f"{section}.equal_share_percent", 0, 100, problems)
    if problems:
        raise PolicyError(problems)
    return Policy(
        id=doc["id"],
        version=doc["version"],
        title=doc["title"],
        management_finding=doc["management_finding"],
        within_minutes=full["within_minutes"],
        before_first_elimination=full["before_first_elimination"],
        not_in_the_money_returned=before["returned"],
        not_in_the_money_equal_share_percent=before["equal_share_percent"],
        in_the_money_equal_share_percent=nested["in_the_money"]["equal_share_percent"],
        first_place_cap=doc["first_place_cap"],
        overlay=doc["overlay"],
        refund_form=doc["refund_form"],
    )


def _shown(value: object) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    return f"a JSON {json_type(value)}"


def _whole(value: object, path: str, low: int, high: int, problems: list[Problem]) -> None:
    if type(value) is not int:
        problems.append(Problem(path, f"must be a whole number, not {_shown(value)}"))
    elif not low <= value <= high:
        problems.append(
            Problem(path, f"must be a whole number from {low} to {high:,}, not {value}")
        )


def _boolean(value: object, path: str, problems: list[Problem]) -> None:
    if not isinstance(value, bool):
        problems.append(Problem(path, f"must be true or false, not {_shown(value)}"))


def _choice(value: object, path: str, allowed: tuple[str, ...], problems: list[Problem]) -> None:
    if not (isinstance(value, str) and value in allowed):
        choices = ", ".join(allowed)
        problems.append(Problem(path, f"must be one of {choices}, not {_shown(value)}"))


def _text(value: object, path: str, problems: list[Problem]) -> None:
    if not isinstance(value, str):
        problems.append(Problem(path, f"must be a string, not {_shown(value)}"))
    elif not value.strip():
        problems.append(Problem(path, "must not be empty"))
    elif len(value) > MAX_TEXT:
        problems.append(Problem(path, f"is {len(value):,} characters long; at most {MAX_TEXT}"))
    elif _CONTROL.search(value):
        problems.append(Problem(path, "must not contain control characters or line breaks"))


def _load_presets() -> dict[str, Policy]:
    """The shipped presets, by id (the files of payouts/policies/)."""
    # Plain files beside the module (package data): importlib.resources would import pathlib,
    # zipfile and tempfile into every run of the command line.
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies")
    presets = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), "rb") as fh:
                policy = parse_policy(fh.read())
            assert name == f"{policy.id}.json", name
            presets[policy.id] = policy
    return presets


PRESETS: dict[str, Policy] = _load_presets()


def default_policy() -> Policy:
    return PRESETS[DEFAULT_POLICY_ID]


def policy_named(policy_id: str | None) -> Policy:
    """The preset `policy_id` names, or the default one for None. KeyError for an unknown id."""
    return PRESETS[policy_id or DEFAULT_POLICY_ID]
