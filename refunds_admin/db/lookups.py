"""A list of values as one parameter: `column = ANY(array)` on PostgreSQL.

Django writes `column IN (%s, %s, ...)`, one parameter per value, and the database driver
composes each into the statement's text in Python (client-side binding). For the breakdown's name
search, up to queries.SEARCH_LIST positions in each of the page's queries, that composing was a
fifth of the page (docs/performance.md, "The breakdown's positions as one array"). As an
array the list is one parameter. Elsewhere (SQLite) it is Django's IN.
"""

from django.db.models import Lookup
from django.db.models.lookups import In


class AnyOf(Lookup):
    """`AnyOf(F("position"), [3, 17, ...])`, used in filter() as Django's lookups are."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        values = list(self.rhs)
        if connection.vendor != "postgresql":
            return In(self.lhs, values).as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        array_type = self.lhs.output_field.db_type(connection)
        return f"{lhs} = ANY(%s::{array_type}[])", [*lhs_params, values]
