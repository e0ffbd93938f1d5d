"""Money as whole cents. No floats anywhere on the money path.

In files and APIs an amount is a JSON string of ASCII digits with at most two decimals
(`"30"`, `"30.5"`, `"30.00"`); anything else is refused (payout-rules.md, "Money").
"""

import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from operator import floordiv, mod

_AMOUNT = re.compile(r"[0-9]+(?:\.[0-9]{1,2})?")
# Far above any real prize pool, and still inside a PostgreSQL bigint of cents.
MAX_CENTS = 10**15

# ISO 4217 codes whose minor unit is 2. Codes with 0 or 3 minor digits (JPY, KRW, KWD, BHD, ...)
# and the non-currency X codes are deliberately absent: the rules are written for cents.
CURRENCIES_WITH_CENTS = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN
    BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP
    GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK
    LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK
    NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD
    SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG
    YER ZAR ZMW ZWG ZWL
    """.split()
)

_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


class AmountError(ValueError):
    pass


def parse_amount(value: object) -> int:
    """`"30.5"` -> 3050. Raises AmountError with a message fit to follow a field name."""
    if not isinstance(value, str):
        raise AmountError(f"amount must be a string like 30.00, not a JSON {json_type(value)}")
    if not _AMOUNT.fullmatch(value):
        raise AmountError(
            f"amount must be digits with at most two decimals, like 30.00, not {value!r}"
        )
    whole, _, frac = value.partition(".")
    if len(whole.lstrip("0")) > 15:  # checked before int(): a 5,000-digit string is refused fast
        raise AmountError(f"amount {value[:20]}… is larger than any prize pool this tool accepts")
    cents = int(whole) * 100 + int((frac + "00")[:2])
    if cents > MAX_CENTS:
        raise AmountError(f"amount {value} is larger than any prize pool this tool accepts")
    return cents


def to_cents(value: int | str | None) -> int | None:
    """Cents from an int, or from a decimal string such as a proposal summary stores ("30.5",
    "-815.33"); None or "" is no amount. Floats are refused: money never passes through one."""
    if value is None or value == "":
        return None
    if isinstance(value, bool | float) or not isinstance(value, int | str):
        raise TypeError(f"money is integer cents or a decimal string, never {value!r}")
    if isinstance(value, int):
        return value
    text = value.strip()
    negative = text.startswith("-")
    cents = parse_amount(text.removeprefix("-"))
    return -cents if negative else cents


def format_cents(cents: int, *, grouped: bool = False) -> str:
    """81533 -> "815.33" (the interchange format: no separators); grouped=True, for people:
    3015000 -> "30,150.00"."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}" if grouped else f"{sign}{whole}.{frac:02d}"


def format_cents_column(column: Iterable[int]) -> Iterator[str]:
    """format_cents over a column of non-negative amounts, lazily and in C (map, divmod, %):
    a 250k-line proposal is written without a Python call per amount."""
    return map("%d.%02d".__mod__, map(divmod, column, repeat(100)))


def split_cents_column(column: Sequence[int]) -> tuple[Iterator[int], Iterator[int]]:
    """A column of non-negative amounts as two lazy columns, whole units and the cents left
    (0-99), computed in C: for a writer that places "%d" and decimals_texts() itself."""
    return map(floordiv, column, repeat(100)), map(mod, column, repeat(100))


def decimals_texts(after: str = "") -> tuple[str, ...]:
    """The decimals of cents 0 to 99 as written after the whole units (".00" to ".99"), each
    followed by `after`: indexed by the cents left, as split_cents_column gives them."""
    return tuple(f".{cents:02d}{after}" for cents in range(100))


def display(
    cents: int, currency: str, *, symbol: bool = True, drop_zero_cents: bool = False
) -> str:
    """An amount for people, with thousands separators and its currency:
    81533, "USD" -> "$815.33"; symbol=False -> "USD 815.33"; a currency without a common symbol
    keeps its code ("CHF 1.00"); 1750000 with drop_zero_cents -> "$17,500". No currency: the
    number alone."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    number = f"{cents // 100:,}"
    if not (drop_zero_cents and cents % 100 == 0):
        number += f".{cents % 100:02d}"
    mark = _SYMBOLS.get(currency) if symbol else None
    if mark:
        return f"{sign}{mark}{number}"
    return f"{currency} {sign}{number}" if currency else f"{sign}{number}"


def json_type(value: object) -> str:
    """What JSON calls `value`'s type ("number", "array", ...), for messages that say what was
    sent instead: the engine's, the policies' and the API's alike."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        # JSON calls it a string: "not a JSON str" (Python's name) puzzled the reader of a
        # refusal such as `"site_wide_issue": "false"`.
        return "string"
    return type(value).__name__
