"""Moving the test database to a migration and back, for the tests of data migrations (they
must run with transactional_db: a migration cannot run inside the test's transaction)."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(target):
    """Migrate to `target` ([(app, migration)]) and return the apps' models as of it."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def latest():
    """Every app's last migration: the schema the other tests expect."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
