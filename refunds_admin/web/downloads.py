"""Files staff download: CSV and XLSX a spreadsheet opens right, and file names a browser can save.

Every CSV export goes through `csv_writer`, `csv_download` and `attachment`, so that an id or a
reason typed by someone else can never become a formula in a manager's spreadsheet (CSV
injection) or break the response header, and so that Excel reads the file as UTF-8 (the BOM).
Every XLSX export goes through `xlsx_download`: typed cells (amounts are numbers with a money
format, ids are text), written row by row to a temporary file.
"""

import csv
import re
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, date
from decimal import Decimal
from urllib.parse import quote

import xlsxwriter  # type: ignore[import-untyped]  # XlsxWriter ships no type information
from django.http import FileResponse, HttpResponse, StreamingHttpResponse

# A spreadsheet evaluates a cell that starts with one of these as a formula (OWASP "CSV
# injection"); TAB and CR are there because some spreadsheets strip them and then read the rest.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_UNSAFE_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def neutralise(cell):
    """A text cell that starts like a formula gets a leading apostrophe (shown as text, not run).
    Numbers are written as numbers: a negative amount is data, not a formula."""
    if isinstance(cell, str) and cell.startswith(_FORMULA_START):
        return "'" + cell
    return cell


class _Echo:
    def write(self, value):
        return value


class csv_writer:
    """`writerow(cells)` returns the CSV line (for a StreamingHttpResponse), every cell
    neutralised."""

    def __init__(self):
        self._writer = csv.writer(_Echo())

    def writerow(self, cells):
        return self._writer.writerow([neutralise(c) for c in cells])


# Excel opens a CSV without a byte order mark in the machine's legacy code page, so "Jürgen" or
# "玩家" arrive garbled; with the UTF-8 BOM first it reads UTF-8 (other readers skip it, and
# Python reads it with `utf-8-sig`).
BOM = "\ufeff"


def csv_download(lines: Iterable[str], file_name: str, *, stream: bool = True):
    """The CSV `lines` (from csv_writer.writerow) as a download, the BOM first; streamed unless
    `stream` is False (a short report built in one go)."""

    def with_bom():
        yield BOM
        yield from lines

    content_type = "text/csv; charset=utf-8"
    if stream:
        response: HttpResponse | StreamingHttpResponse = StreamingHttpResponse(
            with_bom(), content_type=content_type
        )
    else:
        response = HttpResponse("".join(with_bom()), content_type=content_type)
    response["Content-Disposition"] = attachment(file_name)
    return response


# The kinds of XLSX column and how a value of each is written. Money arrives as integer cents and
# is written as the exact decimal amount (Decimal, scaled by 10^-2: 81533 -> 815.33, written to
# the file as the text "815.33"), a number a spreadsheet adds up, shown with two decimals. Not
# cents / 100 as a float: XlsxWriter writes a float with 16 significant digits, and for one amount
# in ten that shows the float's error (999997 cents -> "9999.969999999999"): Excel reads that back
# as the same double, but the file no longer states the amount, for 3% less time
# (docs/performance.md, "Exports").
TEXT, INTEGER, MONEY, BOOLEAN, MONTH, TIMESTAMP = (
    "text",
    "integer",
    "money",
    "boolean",
    "month",
    "timestamp",
)
MONEY_FORMAT = "#,##0.00"
# Only the columns that need one get a format: a formatted cell costs XlsxWriter a quarter more
# time (docs/performance.md, "Exports"), and text, counts and TRUE/FALSE show right without.
_NUMBER_FORMATS = {
    TEXT: None,
    INTEGER: None,
    MONEY: MONEY_FORMAT,
    BOOLEAN: None,
    MONTH: "yyyy-mm",
    TIMESTAMP: 'yyyy-mm-dd hh:mm:ss "UTC"',
}


def _money(cents):
    return Decimal(cents).scaleb(-2)


def _utc(value):
    # Excel has no time zones: every timestamp is written in UTC, as its format says.
    return value.astimezone(UTC).replace(tzinfo=None)


def _month(value):
    return date(value.year, value.month, 1)


# Each kind's XlsxWriter method (the typed write_* one: write_row works out every cell's type
# again: 4% more instructions per cell) and the conversion its values need first, if any.
_WRITE = {
    TEXT: ("write_string", str),
    INTEGER: ("write_number", None),
    MONEY: ("write_number", _money),
    BOOLEAN: ("write_boolean", None),
    MONTH: ("write_datetime", _month),
    TIMESTAMP: ("write_datetime", _utc),
}


def xlsx_download(
    file_name: str,
    sheet: str,
    columns: Sequence[tuple[str, str, int]],
    rows: Iterable[Sequence],
):
    """One worksheet `sheet`: a frozen header row of `columns` (name, kind, width in
    characters), then `rows` (one value per column, None for an empty cell), as a download.

    XlsxWriter's constant_memory mode writes each row to a temporary file as soon as the next
    one starts, so a 100k-line proposal never sits in memory; the finished file is streamed to
    the browser from disk. Strings are never read as formulas, numbers or links: a screen name
    "=1+2" is the text "=1+2" (so XLSX needs no neutralising)."""
    out = tempfile.TemporaryFile()
    book = xlsxwriter.Workbook(
        out,
        {
            "constant_memory": True,
            "strings_to_formulas": False,
            "strings_to_numbers": False,
            "strings_to_urls": False,
        },
    )
    ws = book.add_worksheet(sheet[:31])
    bold = book.add_format({"bold": True})
    # One format per column, set once on the column: a cell written without a format takes it.
    for col, (_, kind, width) in enumerate(columns):
        number_format = _NUMBER_FORMATS[kind]
        ws.set_column(
            col,
            col,
            width,
            book.add_format({"num_format": number_format}) if number_format else None,
        )
    ws.write_row(0, 0, [name for name, _, _ in columns], bold)
    ws.freeze_panes(1, 0)
    # Ids such as "000123" are text on purpose: no "number stored as text" warning on them.
    ws.ignore_errors({"number_stored_as_text": "A1:XFD1048576"})
    # The inner loop of a 100k-line export (1.2 million cells): one typed call per cell that
    # has a value, nothing else per cell on our side. None and "" stay empty cells (as with
    # write_row: an empty text is no cell, not a cell holding "").
    plan = [
        (col, getattr(ws, _WRITE[kind][0]), _WRITE[kind][1])
        for col, (_, kind, _) in enumerate(columns)
    ]
    row_number = 0
    for row_number, row in enumerate(rows, start=1):
        for (col, write, convert), value in zip(plan, row, strict=True):
            if value is not None and value != "":
                write(row_number, col, convert(value) if convert else value)
    ws.autofilter(0, 0, row_number, len(columns) - 1)
    book.close()
    out.seek(0)
    response = FileResponse(
        out, content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    )
    response["Content-Disposition"] = attachment(file_name)
    return response


def attachment(file_name):
    """A Content-Disposition header value for downloading `file_name` (RFC 6266 / RFC 5987):
    an ASCII fallback in `filename` (anything but letters, digits, dot, dash and underscore
    becomes `_`) and the exact name, UTF-8 and percent-encoded, in `filename*`."""
    fallback = _UNSAFE_IN_FILE_NAME.sub("_", file_name).strip("._") or "download"
    value = f'attachment; filename="{fallback[:150]}"'
    exact = quote(file_name, safe="")
    if exact != fallback:
        value += f"; filename*=UTF-8''{exact}"
    return value
