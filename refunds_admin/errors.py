"""Errors the services raise for people to read.

`PermissionDenied` (Django's) means the user's role does not allow the action. `Refused` means
the action is allowed in general but not now or not with this input; its message says why in the
domain's words ("proposal 12 is already approved"). Views show it, commands print it, the API
returns it as JSON.
"""

from collections.abc import Iterable


class Refused(Exception):
    """A business rule refuses the action; nothing was changed."""

    def __init__(
        self,
        message: str,
        *,
        problems: Iterable[tuple[str, str]] | None = None,
        total: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        # For invalid input: a list of (field or row, message) pairs, every problem found.
        self.problems = list(problems or [])
        # How many problems there were in all, where the check stopped listing them (the
        # snapshot's validation lists the first 50 and counts the rest).
        self.total = total if total is not None else len(self.problems)

    def __str__(self) -> str:
        if not self.problems:
            return self.message
        return (
            self.message + "\n" + "\n".join(f"- {where}: {what}" for where, what in self.problems)
        )


class Conflict(Refused):
    """The same request again (the same identity) with different content: the first is kept and
    the difference is not applied. The API answers 409 naming each differing field, where a
    silent 200 would let a retry's corrected field be lost without anyone knowing."""


def required_text(value: str | None, field: str) -> str:
    """What a person typed into `field` (a reason, a justification), stripped; refused when it
    is empty, naming the field."""
    text = (value or "").strip()
    if not text:
        raise Refused(f"A {field} is required.", problems=[(field, "is required")])
    return text
