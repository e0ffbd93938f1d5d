"""Display filters: money always with its currency, times in the staff member's time zone.

`{{ line.total_cents|money:proposal.currency }}` -> "USD 815.33"
`{{ line.total_cents|money_symbol:proposal.currency }}` -> "$815.33"
`{{ incident.failed_at|staff_time }}` -> <time> in the chosen zone, the UTC time in its tooltip.
"""

from datetime import UTC

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html

from refunds_admin.audit.display import OBJECT_LABELS, change_rows
from refunds_admin.incidents.services import elapsed_in_words
from refunds_admin.payouts.labels import rule_label as _rule_label
from refunds_admin.payouts.money import display, to_cents
from refunds_admin.policies.describe import full_refund_condition
from refunds_admin.zones import zone_name

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
        zone_name(local),
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


@register.filter
def audit_changes(event):
    """An audit event's before/after as labelled rows (audit.display.change_rows)."""
    return change_rows(event)


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


@register.filter
def object_label(object_type):
    """An audit event's object type as people call it: "payoutproposal" -> "proposal"."""
    return OBJECT_LABELS.get(object_type, object_type)


@register.filter
def policy_condition(policy):
    """An engine Policy's rule-1 condition in one sentence (policies/describe.py)."""
    return full_refund_condition(policy)


@register.filter
def policy_finding(version):
    """A PolicyVersion's words for management's finding (its `management_finding`)."""
    return version.engine().management_finding if version is not None else ""


@register.filter
def payments(parts, currency=""):
    """An entry's paid_with or a line's refunds: "ticket TKT-88121 USD 55.00 + cash USD 11.00"."""
    from refunds_admin.web.queries import payments_text

    return payments_text(parts, currency)
