"""One way to page a list: keyset (cursor) paging, "Showing 51-100 of 1,234", sortable columns.

The tournament, outage, audit and player lists all page through `KeysetPage`, and all show it
with the partials of `templates/web/_paging.html` (the sortable column headers and the pager).

Why keyset and not OFFSET: the next page is "the rows after this one in this order", so the
database walks the sort column's index from the cursor instead of counting and skipping every
row before it; the 2,000th page of 100k audit events costs what the first one does. Every sort
ends with the primary key in the same direction, so rows that tie on the sorted column (many
tournaments start at 20:00) still have one exact order and no row is shown twice or skipped.

The cursor is the sort key of the first or last row shown, signed (django.core.signing): a
person cannot forge one to read past a filter, and a damaged or stale cursor (another sort, an
old link) is ignored with a notice and the first page shown, never a 500. An unknown sort is
ignored the same way (the default sort, and a notice).

Queries per page, whatever the number of rows: the page itself and the total count of the same
filtered queryset. Where the page starts ("51-100") travels in the cursor.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.core import signing
from django.db.models import Q, QuerySet

PAGE_SIZE = 50
_SALT = "refunds_admin.web.paging"


@dataclass(frozen=True)
class Column:
    """A sortable column: `key` is its name in the URL (`?sort=started`, `?sort=-started`),
    `fields` what it sorts by (the primary key breaks the remaining ties). The fields must not
    be NULL: coalesce a nullable one in the queryset (NULLs do not compare)."""

    key: str
    label: str
    fields: tuple[str, ...]
    numeric: bool = False  # right-aligned, as the table's amounts and counts
    # The first click on a time or a count sorts newest or largest first: what one looks for.
    descending_first: bool = False


def _encode(value):
    if isinstance(value, datetime):
        return {"dt": value.isoformat()}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"a sort value of type {type(value).__name__} cannot go in a cursor")


def _decode(value):
    if isinstance(value, dict):
        return datetime.fromisoformat(value["dt"])
    return value


def _value(row, field):
    if isinstance(row, dict):
        return row[field]
    for part in field.split("__"):
        row = getattr(row, part)
    return row


def _after(fields, values, *, smaller):
    """The rows strictly beyond `values` in the order (fields..., pk): with smaller keys when
    `smaller`, else greater. Written as `f0 >= v0 AND (f0 > v0 OR (f0 = v0 AND ...))`: the first
    half lets the database start its index scan at the cursor instead of filtering from the
    top."""
    op = "lt" if smaller else "gt"
    beyond = Q()
    for i, field in enumerate(fields):
        step = Q(**{f"{f}": v for f, v in zip(fields[:i], values[:i], strict=True)})
        beyond |= step & Q(**{f"{field}__{op}": values[i]})
    return Q(**{f"{fields[0]}__{op}e": values[0]}) & beyond


class KeysetPage:
    """One page of `queryset` sorted by one of `columns`, read from the request's query string:
    `sort` (a column key, "-" first for descending) and `cursor` (opaque, from a previous page's
    links). Everything else in the query string (the filters) is kept in every link."""

    def __init__(
        self,
        query: Any,
        queryset: QuerySet,
        columns: list[Column],
        *,
        default: str,
        size: int | None = None,
        noun: str = "rows",
        tiebreak: str = "pk",
    ):
        self.columns = {c.key: c for c in columns}
        self.noun = noun
        self.size = size or PAGE_SIZE
        self.notice = ""
        self._query = {k: v for k, v in query.items() if k not in ("cursor", "sort") and v != ""}
        sort = query.get("sort") or default
        if sort.lstrip("-") not in self.columns:
            self.notice = f"The list cannot be sorted by “{sort}”: sorted by its usual order."
            sort = default
        self.sort = sort
        self.descending = sort.startswith("-")
        self.column = self.columns[sort.lstrip("-")]
        # The tie-breaker is unique (the primary key; a grouped list's own key), so the order is
        # total and a cursor names exactly one place in it.
        self.fields = tuple(dict.fromkeys((*self.column.fields, tiebreak)))
        cursor = self._read_cursor(query.get("cursor"))
        self.total = queryset.count()
        self.rows, self.start = self._fetch(queryset, cursor)
        if cursor is not None and not self.rows and self.total:
            # The rows beyond the cursor are gone (deleted, or filtered since): start again.
            self.rows, self.start = self._fetch(queryset, None)

    # -- reading --------------------------------------------------------------------------

    def _read_cursor(self, raw):
        if not raw:
            return None
        try:
            data = signing.loads(raw, salt=_SALT)
            if data["s"] != self.sort or data["d"] not in ("next", "prev", "last"):
                raise ValueError("another sort")
            values, index = None, None
            if data["d"] != "last":
                values = [_decode(v) for v in data["v"]]
                index = int(data["i"])
                if len(values) != len(self.fields):
                    raise ValueError("another column")
            return data["d"], values, index
        except (signing.BadSignature, KeyError, TypeError, ValueError):
            self.notice = self.notice or (
                "That page link is out of date or damaged: here is the first page."
            )
            return None

    def _ordered(self, queryset, *, reverse):
        desc = self.descending != reverse
        return queryset.order_by(*[f"-{f}" if desc else f for f in self.fields])

    def _fetch(self, queryset, cursor):
        direction, values, index = cursor or ("next", None, None)
        backwards = direction in ("prev", "last")
        qs = queryset
        if values is not None:
            # Forward in a descending sort means towards smaller keys, and backwards the reverse.
            qs = qs.filter(_after(self.fields, values, smaller=self.descending != backwards))
        rows = list(self._ordered(qs, reverse=backwards)[: self.size + 1])
        self._more = len(rows) > self.size
        rows = rows[: self.size]
        if backwards:
            rows.reverse()
        self._backwards, self._from_cursor = backwards, values is not None
        if not rows:
            return rows, 0
        # Where the page starts, for "51-100": carried in the cursor rather than counted (a
        # count of the rows before page 1,000 reads them all). Rows added or removed since the
        # link was made can shift it by as many; the first and last pages are always exact.
        if values is None:
            start = self.total - len(rows) if direction == "last" else 0
        elif not self._more:  # the page reached an end of the list
            start = 0 if backwards else self.total - len(rows)
        else:
            at = index or 0  # a cursor with values always has its place
            start = at - len(rows) if backwards else at + 1
        return rows, max(0, min(start, self.total - len(rows)))

    def _key(self, row):
        return [_value(row, f) for f in self.fields]

    def _cursor(self, direction, row=None, index=None):
        data = {"s": self.sort, "d": direction}
        if row is not None:
            data["v"] = [_encode(v) for v in self._key(row)]
            data["i"] = index  # the row's place in the list, from 0
        return signing.dumps(data, salt=_SALT, compress=True)

    # -- what the template shows ----------------------------------------------------------

    @property
    def has_next(self):
        if not self.rows:
            return False
        return (not self._backwards and self._more) or (self._backwards and self._from_cursor)

    @property
    def has_prev(self):
        if not self.rows:
            return False
        return (self._backwards and self._more) or (not self._backwards and self._from_cursor)

    @property
    def first_number(self):
        return self.start + 1 if self.rows else 0

    @property
    def last_number(self):
        return self.start + len(self.rows)

    def _link(self, **extra):
        return urlencode({**self._query, **extra})

    @property
    def keep(self):
        """The filters and the sort, for a link that starts at the first page (an export)."""
        return self._link(sort=self.sort)

    @property
    def filters(self):
        """The filters alone: hidden fields of a form that changes only the sort."""
        return list(self._query.items())

    @property
    def first_query(self):
        return self._link(sort=self.sort)

    @property
    def last_query(self):
        return self._link(sort=self.sort, cursor=self._cursor("last"))

    @property
    def next_query(self):
        return self._link(
            sort=self.sort, cursor=self._cursor("next", self.rows[-1], self.last_number - 1)
        )

    @property
    def prev_query(self):
        return self._link(sort=self.sort, cursor=self._cursor("prev", self.rows[0], self.start))

    @property
    def headers(self):
        """Per column key: its label, aria-sort ("ascending", "descending", "none") and the
        link that sorts by it (descending when it is already sorted ascending, else
        ascending), from the first page, filters kept."""
        out = {}
        for key, column in self.columns.items():
            current = self.column.key == key
            aria = ("descending" if self.descending else "ascending") if current else "none"
            if current:
                flip = key if self.descending else f"-{key}"
            else:
                flip = f"-{key}" if column.descending_first else key
            out[key] = {
                "key": key,
                "label": column.label,
                "aria": aria,
                "numeric": column.numeric,
                "query": self._link(sort=flip),
            }
        return out
