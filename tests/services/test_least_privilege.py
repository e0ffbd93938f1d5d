"""The app's database role cannot rewrite history (PostgreSQL): it owns no table, so it cannot
DISABLE TRIGGER, TRUNCATE, ALTER or detach partitions, it may only insert audit events and
credits, and it cannot touch the lines of a decided proposal -- yet the whole flow (import,
prepare, submit, approve, post) runs as that role.

The test creates the role itself (`refunds_app_<test database>`, inside the test's transaction,
so nothing outlives it), grants it its rights with `grant_app_role` as the owner would, and
switches its connection to it with SET LOCAL ROLE.
"""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from refunds_admin.db import partition_bound
from refunds_admin.ledger import posting as ledger
from refunds_admin.proposals import services as proposals
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from tests.support.factories import draft_proposal

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture
def as_app_role(support, manager, other_manager):
    role = f"refunds_app_{connection.settings_dict['NAME']}"[:63]
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {connection.ops.quote_name(role)} NOLOGIN")
    call_command("grant_app_role", role)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL ROLE {connection.ops.quote_name(role)}")
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    yield role
    with connection.cursor() as cursor:
        cursor.execute("RESET ROLE")


def _refused(sql, params=()):
    with pytest.raises(DatabaseError) as e, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    return str(e.value)


PROBES = [
    ("disable the audit's triggers", "ALTER TABLE audit_auditevent DISABLE TRIGGER ALL"),
    ("truncate the audit", "TRUNCATE audit_auditevent"),
    ("rewrite an audit event", "UPDATE audit_auditevent SET reason = 'nothing happened'"),
    ("delete audit events", "DELETE FROM audit_auditevent"),
    ("truncate the credits", "TRUNCATE ledger_credit"),
    ("rewrite a credit", "UPDATE ledger_credit SET amount_cents = amount_cents + 1"),
    ("drop a four-eyes constraint",
     "ALTER TABLE proposals_payoutproposal DROP CONSTRAINT approver_is_not_preparer"),
    ("switch triggers off for the session", "SET session_replication_role = replica"),
]  # fmt: skip


def test_the_whole_flow_runs_as_the_app_role_and_history_cannot_be_rewritten(
    as_app_role, support, manager, capsys
):
    proposal = draft_proposal(support)  # COPY into a new partition, attached by the owner
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    proposal = proposals.approve_proposal(
        proposal, acting_user=manager, fingerprint=proposal.fingerprint
    )
    ledger.post_proposal(proposal.pk)
    assert PayoutProposal.objects.get(pk=proposal.pk).status == "posted"

    for what, sql in PROBES:
        message = _refused(sql)
        assert "permission denied" in message or "must be owner" in message, what
    with connection.cursor() as cursor:
        (part,) = partition_bound(cursor, PayoutLine._meta.db_table, proposal.pk)
    assert "must be owner" in _refused(f"ALTER TABLE proposals_payoutline DETACH PARTITION {part}")
    assert "permission denied" in _refused(f"UPDATE {part} SET total_cents = total_cents + 1")
    assert "immutable" in _refused(
        "UPDATE proposals_payoutline SET fee_refund_cents = fee_refund_cents + 1, "
        "total_cents = total_cents + 1 WHERE proposal_id = %s",
        [proposal.pk],
    )
    assert "only while it is a draft" in _refused(
        "SELECT refunds_attach_partition('proposals_payoutline', %s, %s)", [part, proposal.pk]
    )
    # It may insert an audit event (that is its job), but not one that fits the chain: not one
    # without a hash (which would count as older than the chain)...
    insert = (
        "INSERT INTO audit_auditevent (id, created_at, actor_name, action, object_type, "
        "object_id, tournament_external_id, player_ids, reason, request_id, prev_hash, hash)"
        " VALUES (%s, '2020-01-01', 'system', 'proposal.approved', 'payoutproposal', '1', '', "
        "'[]', 'back-dated', '', '', %s)"
    )
    assert "carries its hash" in _refused(insert, [10**9, ""])
    # ... and one appended with a made-up hash is found.
    with connection.cursor() as cursor:
        cursor.execute(insert, [10**9, "f" * 64])
    with pytest.raises(CommandError, match="broken at event") as e:
        call_command("verify_audit")
    assert e.value.returncode == 1


def _posted_proposal(support, manager):
    proposal = draft_proposal(support)
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    proposal = proposals.approve_proposal(
        proposal, acting_user=manager, fingerprint=proposal.fingerprint
    )
    ledger.post_proposal(proposal.pk)
    return PayoutProposal.objects.get(pk=proposal.pk)


def test_a_temporary_table_does_not_fool_the_databases_guards(as_app_role, support, manager):
    """A session's temporary table is found before the schema's unless a function names
    pg_temp last: a temporary `proposals_payoutproposal` saying "draft" must not let the line
    trigger, or the owner's attach function, rewrite a posted proposal's lines."""
    proposal = _posted_proposal(support, manager)
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE proposals_payoutproposal (id bigint, status text)")
        cursor.execute(
            "INSERT INTO pg_temp.proposals_payoutproposal VALUES (%s, 'draft')", [proposal.pk]
        )
    assert "immutable" in _refused(
        "UPDATE public.proposals_payoutline SET chip_equity_cents = chip_equity_cents + 100, "
        "total_cents = total_cents + 100 WHERE proposal_id = %s",
        [proposal.pk],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE public.forged_lines (LIKE public.proposals_payoutline "
            "INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
        )
        cursor.execute(
            "INSERT INTO public.forged_lines SELECT * FROM public.proposals_payoutline "
            "WHERE proposal_id = %s",
            [proposal.pk],
        )
    assert "only while it is a draft" in _refused(
        "SELECT refunds_attach_partition('proposals_payoutline', 'forged_lines', %s)",
        [proposal.pk],
    )
    total = sum(PayoutLine.objects.filter(proposal=proposal).values_list("total_cents", flat=True))
    assert total == proposal.total_cents


def test_a_decided_proposal_never_goes_back_to_draft(as_app_role, support, manager):
    proposal = _posted_proposal(support, manager)
    for status in ("draft", "submitted", "approved", "posting"):
        message = _refused(
            "UPDATE proposals_payoutproposal SET status = %s WHERE id = %s", [status, proposal.pk]
        )
        assert "never goes back" in message, status
    assert PayoutProposal.objects.get(pk=proposal.pk).status == "posted"


def test_every_function_of_ours_names_its_schemas_with_pg_temp_last(db):
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT p.proname, p.proconfig FROM pg_proc p
            JOIN pg_namespace n ON n.oid = p.pronamespace
            JOIN pg_language l ON l.oid = p.prolang
            WHERE n.nspname = 'public' AND l.lanname = 'plpgsql'
            """
        )
        functions = dict(cursor.fetchall())
    assert "refunds_attach_partition" in functions and "proposals_payoutline_frozen" in functions
    unpinned = {
        name
        for name, config in functions.items()
        if "search_path=pg_catalog, public, pg_temp" not in (config or [])
    }
    assert unpinned == set()
