"""How a moment's time zone is named on screens, statements and in the audit's sentences."""

from datetime import datetime

# Abbreviations that name more than one offset among the zones staff may choose
# (web/timezones.py) or that readers commonly take for another zone: Asia/Manila and
# America/Los_Angeles are both "PST"; "IST" is India, Ireland and Israel; "CST" is Chicago and
# China; "BST" is London in summer and Bangladesh; "AST" is Atlantic and Arabia.
AMBIGUOUS = frozenset({"PST", "IST", "CST", "BST", "AST"})


def zone_name(moment: datetime) -> str:
    """The moment's zone abbreviation ("CET"), followed by its offset where the abbreviation
    alone could be read as another zone's ("PST (UTC+08:00)" in Manila)."""
    name = moment.tzname() or ""
    if name not in AMBIGUOUS:
        return name
    offset = moment.strftime("%z")  # "+0800"
    return f"{name} (UTC{offset[:3]}:{offset[3:]})"
