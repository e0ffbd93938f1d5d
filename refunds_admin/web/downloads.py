"""Files staff download: CSV cells a spreadsheet will not run, and file names a browser can save.

Every export goes through `csv_writer` and `attachment`, so that an id or a reason typed by
someone else can never become a formula in a manager's spreadsheet (CSV injection) or break the
response header.
"""

import csv
import re
from urllib.parse import quote

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
