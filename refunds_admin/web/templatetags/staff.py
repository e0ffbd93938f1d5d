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

from refunds_admin.payouts.labels import rule_label as _rule_label
from refunds_admin.payouts.money import display, to_cents

register = template.Library()


@register.filter
def money(amount, currency=""):
    """Cents (int) or a decimal string ("815.33", as in a proposal summary) -> "USD 815.33"."""
    cents = to_cents(amount)
    return "" if cents is None else display(cents, currency, symbol=False)


@register.filter
def money_symbol(amount, currency=""):
    """Like `money` but with the currency's symbol when it has a common one: "$815.33"."""
    cents = to_cents(amount)
    return "" if cents is None else display(cents, currency)


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
    """ "full_refund" -> "Rule 1: full refund" (payouts.labels, the one table of rule names)."""
    return _rule_label(rule)


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
