"""Display filters: money always with its currency, times in the staff member's time zone.

`{{ line.total_cents|money:proposal.currency }}` -> "USD 815.33"
`{{ line.total_cents|money_symbol:proposal.currency }}` -> "$815.33"
`{{ incident.failed_at|staff_time }}` -> <time> in the chosen zone, the UTC time in its tooltip.
"""

import json
from datetime import UTC

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

from refunds_admin.incidents.services import elapsed_in_words
from refunds_admin.web.money import format_money, to_cents

register = template.Library()

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "CAD": "CA$", "AUD": "A$"}


@register.filter
def money(amount, currency=""):
    """Cents (int) or a decimal string ("815.33", as in a proposal summary) -> "USD 815.33"."""
    cents = to_cents(amount)
    if cents is None:
        return ""
    return f"{currency} {format_money(cents)}".strip()


@register.filter
def money_symbol(amount, currency=""):
    """Like `money` but with the currency's symbol when it has a common one: "$815.33"."""
    cents = to_cents(amount)
    if cents is None:
        return ""
    symbol = SYMBOLS.get(currency)
    if symbol is None:
        return money(cents, currency)
    sign = "-" if cents < 0 else ""
    return f"{sign}{symbol}{format_money(abs(cents))}"


@register.filter
def staff_time(value, fmt="Y-m-d H:i"):
    """An aware datetime shown in the active (staff) time zone; hover shows it in UTC."""
    if not value:
        return ""
    local = timezone.localtime(value)
    utc = value.astimezone(UTC)
    return format_html(
        '<time datetime="{}" title="{} UTC">{} {}</time>',
        utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        utc.strftime("%Y-%m-%d %H:%M:%S"),
        date_format(local, fmt),
        local.tzname(),
    )


@register.filter
def utc_iso(value):
    """ISO 8601 in UTC, for data attributes read by the countdown script."""
    if not value:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@register.filter
def rule_label(rule):
    return {
        "full_refund": "Rule 1: full refund",
        "in_the_money": "Rule 2: in the money",
        "not_in_the_money": "Rule 2: not yet in the money",
    }.get(rule, rule or "—")


@register.filter
def statement_rows(text):
    """The statement text (the engine's explain(): "label<TAB>amount" per line) as table rows,
    so amounts line up in a column instead of after ragged tabs."""
    return [
        (label, amount) for label, _, amount in (line.partition("\t") for line in text.splitlines())
    ]


@register.filter
def get_item(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


_ABSENT = object()


def _readable(value):
    """A recorded value as a person reads it: text as is, numbers and flags as JSON, lists and
    objects as compact JSON ("[\"p001\", \"p002\"]")."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@register.filter
def audit_changes(event):
    """An audit event's before/after as rows (key, before, after), one per key: a changed value
    reads "status: draft → submitted", a value recorded only on one side shows that side alone.
    before/after are JSON objects; anything else is shown under the key "value"."""

    def as_dict(value):
        if value is None:
            return {}
        return value if isinstance(value, dict) else {"value": value}

    before, after = as_dict(event.before), as_dict(event.after)
    rows = []
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
        rows.append(
            {
                "key": key,
                "before": None if old is _ABSENT else _readable(old),
                "after": None if new is _ABSENT else _readable(new),
                "changed": old is not _ABSENT and new is not _ABSENT and old != new,
            }
        )
    return rows


@register.filter
def signed_money(amount, currency=""):
    """A change of money: "+USD 12.50", "-USD 3.00", "USD 0.00"."""
    cents = to_cents(amount)
    if cents is None:
        return ""
    sign = "+" if cents > 0 else "-" if cents < 0 else ""
    return f"{sign}{money(abs(cents), currency)}"


@register.filter
def elapsed_words(seconds):
    """Seconds from the start to the failure in words: "2 h 10 min after the start"."""
    if seconds is None or seconds == "":
        return ""
    seconds = int(seconds)
    where = "before the start" if seconds < 0 else "after the start"
    return f"{elapsed_in_words(seconds)} {where}"
