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
def get_item(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None
