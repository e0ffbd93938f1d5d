"""Money for display. Amounts are integer cents everywhere; strings only at the edges."""

import re

_AMOUNT = re.compile(r"^(-?)([0-9]+)(?:\.([0-9]{1,2}))?$")


def to_cents(amount):
    """Cents from an int, or from a decimal string as stored in a proposal summary ("30.5")."""
    if amount is None or amount == "":
        return None
    if isinstance(amount, bool | float):
        raise TypeError(f"money is integer cents or a decimal string, never {amount!r}")
    if isinstance(amount, int):
        return amount
    match = _AMOUNT.match(str(amount).strip())
    if not match:
        raise ValueError(f"not an amount: {amount!r}")
    sign, whole, frac = match.groups()
    cents = int(whole) * 100 + int((frac or "0").ljust(2, "0"))
    return -cents if sign else cents


def format_money(cents):
    """81533 -> "815.33"; 3015000 -> "30,150.00" (thousands separated for reading)."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}"


def plain_amount(cents):
    """81533 -> "815.33": the file format of amounts (exports), no separators."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}.{frac:02d}"
