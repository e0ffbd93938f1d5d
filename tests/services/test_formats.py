"""Tournament formats in the app (policies.md): knockout bounties, rebuys and add-ons,
what an entry paid with, guarantees -- imported from every path, refused at import naming the
entry and field with nothing stored, kept on the proposal's lines, fingerprinted, and refused
at approval while the wallet cannot return tickets and tournament money.

The knockout (tests/factories.knockout_doc): the standard tournament at $30 + $10 KO + $3,
active heads carrying $20 / $15 / $10 / $15, e2 with a $30 + $3 rebuy, e1 paid with ticket
TKT-1 and e5 with $20 of tournament money and $23 cash.
"""

import csv
import io
import json
import re
from datetime import timedelta
from pathlib import Path

import openpyxl
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.utils import timezone

from refunds_admin.audit.models import AuditEvent
from refunds_admin.errors import Refused
from refunds_admin.incidents.services import import_csv
from refunds_admin.ledger import posting as ledger
from refunds_admin.ledger.models import Credit, PostedTotal
from refunds_admin.payouts import compute_proposal, parse_policy, parse_snapshot
from refunds_admin.proposals import figures, fingerprint
from refunds_admin.proposals import services as proposals
from refunds_admin.proposals.models import PayoutLine, PayoutProposal
from refunds_admin.tournaments.models import Entry, PrizePlace, Snapshot, Tournament
from refunds_admin.tournaments.services import create_api_client, export_snapshot
from tests.support.factories import (
    draft_proposal,
    dumps,
    import_doc,
    knockout_doc,
    posted_proposal,
    snapshot_doc,
    submitted_proposal,
)

pytestmark = pytest.mark.django_db
postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the SQL twin runs on PostgreSQL"
)


def _nothing_stored():
    assert Tournament.objects.count() == 0
    assert Snapshot.objects.count() == 0
    assert Entry.objects.count() == 0
    assert PrizePlace.objects.count() == 0
    assert AuditEvent.objects.filter(action="snapshot.imported").count() == 0


def _stored_entries(snapshot):
    return {e.entry_id: e for e in Entry.objects.filter(snapshot=snapshot).order_by("position")}


def _assert_knockout_stored(snapshot):
    t = snapshot.tournament
    assert (t.bounty_cents, t.guarantee_cents) == (10_00, 2_000_00)
    assert t.formats == ["knockout", "rebuys", "paid_with"] == snapshot.formats
    entries = _stored_entries(snapshot)
    e1, e2, e5 = entries["e1"], entries["e2"], entries["e5"]
    assert (e1.bounty_paid_cents, e1.bounty_cents, e1.bounties_won_cents) == (10_00, 20_00, 20_00)
    assert e1.paid_with == [{"method": "ticket", "amount_cents": 43_00, "ticket_id": "TKT-1"}]
    assert (e2.rebuys_paid_cents, e2.rebuy_fees_paid_cents, e2.paid_with) == (30_00, 3_00, None)
    assert (e5.status, e5.bounty_paid_cents, e5.bounty_cents, e5.bounties_won_cents) == (
        "eliminated",
        10_00,
        0,
        0,
    )
    assert e5.paid_with == [
        {"method": "tournament_money", "amount_cents": 20_00},
        {"method": "cash", "amount_cents": 23_00},
    ]


# --------------------------------------------------------------------------------------------
# Import: every path stores every field
# --------------------------------------------------------------------------------------------


def test_a_json_upload_stores_the_knockout_rebuys_and_payments(support):
    snapshot = import_doc(support, knockout_doc(guarantee="2000.00"))
    _assert_knockout_stored(snapshot)
    assert export_snapshot(snapshot.tournament) == snapshot.document  # round trip


def test_a_plain_snapshot_stores_no_format(support):
    snapshot = import_doc(support)
    assert snapshot.formats == [] and snapshot.tournament.bounty_cents is None
    e1 = Entry.objects.get(snapshot=snapshot, entry_id="e1")
    assert (e1.bounty_paid_cents, e1.rebuys_paid_cents, e1.paid_with) == (0, 0, None)


def test_the_api_stores_the_new_fields_and_refuses_naming_entry_and_field(support):
    token = create_api_client("platform", user=support)[1]
    api = Client()
    headers = {"Authorization": f"Bearer {token}"}
    bad = knockout_doc(guarantee="2000.00")
    bad["entries"][4]["paid_with"][1]["amount"] = "22.00"  # $42 paid with for $43 paid
    response = api.post(
        "/api/snapshots", data=dumps(bad), content_type="application/json", headers=headers
    )
    assert response.status_code == 400
    fields = [p["field"] for p in response.json()["problems"]]
    assert any(f.startswith("entries[4] (e5).paid_with") for f in fields), fields
    _nothing_stored()
    response = api.post(
        "/api/snapshots",
        data=dumps(knockout_doc(guarantee="2000.00")),
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == 201, response.content
    _assert_knockout_stored(Snapshot.objects.get())


def test_the_command_imports_and_exports_a_knockout_byte_for_byte(tmp_path, capsys):
    source = tmp_path / "ko.json"
    source.write_text(dumps(knockout_doc(guarantee="2000.00")), encoding="utf-8")
    call_command("import_snapshot", str(source))
    _assert_knockout_stored(Snapshot.objects.get())
    exported = tmp_path / "out.json"
    call_command("export_snapshot", "T-KO", output=str(exported))
    assert exported.read_bytes() == source.read_bytes()


def test_the_command_refuses_a_bounty_without_a_knockout_and_stores_nothing(tmp_path):
    doc = knockout_doc()
    del doc["tournament"]["bounty"]
    source = tmp_path / "bad.json"
    source.write_text(dumps(doc), encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("import_snapshot", str(source))
    assert "entries[0] (e1).bounty" in str(refused.value)
    _nothing_stored()


def _ticket_twice(doc):
    doc["entries"][4]["paid_with"] = [{"method": "ticket", "amount": "43.00", "ticket_id": "TKT-1"}]


def _set(index, **fields):
    def change(doc):
        doc["entries"][index].update(fields)

    return change


def _without_tournament_bounty(doc):
    del doc["tournament"]["bounty"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_without_tournament_bounty, "entries[0] (e1).bounty"),
        (_set(5, bounty="5.00"), "entries[5] (e6).bounty"),
        (_set(1, rebuys_paid="30.001"), "entries[1] (e2).rebuys_paid"),
        (_set(2, bounty_paid=10), "entries[2] (e3).bounty_paid"),
        (
            _set(0, paid_with=[{"method": "ticket", "amount": "42.00", "ticket_id": "T"}]),
            "entries[0] (e1).paid_with",
        ),
        (
            _set(0, paid_with=[{"method": "voucher", "amount": "43.00"}]),
            "entries[0] (e1).paid_with[0].method",
        ),
        (
            _set(0, paid_with=[{"method": "ticket", "amount": "43.00", "ticket_id": ""}]),
            "entries[0] (e1).paid_with[0].ticket_id",
        ),
        (_ticket_twice, "entries[4] (e5).paid_with[0].ticket_id"),
    ],
    ids=[
        "bounty-without-knockout",
        "bounty-on-eliminated",
        "malformed-amount",
        "number-not-string",
        "paid-with-sum",
        "unknown-method",
        "ticket-without-id",
        "ticket-twice",
    ],
)
def test_every_refusal_of_the_spec_names_entry_and_field_and_stores_nothing(support, change, field):
    doc = knockout_doc()
    change(doc)
    with pytest.raises(Refused) as refused:
        import_doc(support, doc)
    fields = [where for where, _ in refused.value.problems]
    assert any(where.startswith(field) for where in fields), fields
    _nothing_stored()


# --------------------------------------------------------------------------------------------
# The CSV form: the same fields as optional columns
# --------------------------------------------------------------------------------------------

ENTRIES_CSV = """entry_id,player_id,status,chips,bounty,bounties_won,rebuys_paid,rebuy_fees_paid,paid_with
e1,p1,active,40000,20.00,20.00,,,ticket TKT-1 43.00
e2,p2,active,30000,15.00,10.00,30.00,3.00,
e3,p3,active,20000,10.00,0.00,,,
e4,p4,active,10000,15.00,10.00,,,
e5,p5,eliminated,,,0.00,,,tournament_money 20.00; cash 23.00
e6,p6,eliminated,,,0.00,,,
e7,p7,eliminated,,,0.00,,,
e8,p8,eliminated,,,0.00,,,
e9,p9,eliminated,,,0.00,,,
e10,p10,eliminated,,,0.00,,,
"""
PRIZES_CSV = "place,amount\n1,500.00\n2,300.00\n3,200.00\n"


def csv_fields(**changes):
    fields = {
        "external_id": "T-KO",
        "name": "$30 + $10 KO + $3",
        "currency": "USD",
        "buy_in": "30.00",
        "fee": "3.00",
        "starts_at": (timezone.now() - timedelta(hours=1)).isoformat(),
        "bounty": "10.00",
        "guarantee": "2000.00",
    }
    return fields | changes


def test_the_csv_form_stores_the_knockout_rebuys_and_payments(support):
    snapshot = import_csv(ENTRIES_CSV, PRIZES_CSV, csv_fields(), acting_user=support)
    _assert_knockout_stored(snapshot)
    doc = json.loads(snapshot.document)
    assert doc["tournament"]["bounty"] == "10.00"
    assert doc["entries"][4]["paid_with"] == [
        {"method": "tournament_money", "amount": "20.00"},
        {"method": "cash", "amount": "23.00"},
    ]


def test_the_csv_form_reads_cash_alone_as_all_in_cash_as_the_exports_write_it(support):
    # The breakdown and the proposal's CSV say "cash" for an entry that paid all in cash; the
    # same word in the entries CSV means the same (an empty cell), not a malformed payment.
    entries = ENTRIES_CSV.replace(
        "e3,p3,active,20000,10.00,0.00,,,", "e3,p3,active,20000,10.00,0.00,,,cash"
    )
    snapshot = import_csv(entries, PRIZES_CSV, csv_fields(), acting_user=support)
    doc = json.loads(snapshot.document)
    assert "paid_with" not in doc["entries"][2]
    assert doc["entries"][0]["paid_with"] == [
        {"method": "ticket", "ticket_id": "TKT-1", "amount": "43.00"}
    ]


@pytest.mark.parametrize(
    ("entries", "fields", "where"),
    [
        # A bounty cell in a tournament without a knockout bounty: the form's field is empty.
        (ENTRIES_CSV, {"bounty": ""}, "entries CSV row 2 (entry e1), bounty"),
        (
            ENTRIES_CSV.replace("ticket TKT-1 43.00", "ticket TKT-1 42.00"),
            {},
            "entries CSV row 2 (entry e1), paid_with",
        ),
        (
            ENTRIES_CSV.replace("ticket TKT-1 43.00", "ticket 43.00"),
            {},
            "entries CSV row 2 (entry e1), paid_with",
        ),
        (
            ENTRIES_CSV.replace("tournament_money 20.00", "voucher 20.00"),
            {},
            "entries CSV row 6 (entry e5), paid_with[0].method",
        ),
        (
            ENTRIES_CSV.replace("30.00,3.00", "30.001,3.00"),
            {},
            "entries CSV row 3 (entry e2), rebuys_paid",
        ),
        (ENTRIES_CSV, {"guarantee": "2,000"}, "guarantee"),
    ],
    ids=[
        "bounty-without-knockout",
        "paid-with-sum",
        "ticket-layout",
        "unknown-method",
        "malformed-rebuy",
        "malformed-guarantee",
    ],  # fmt: skip
)
def test_the_csv_form_refuses_naming_row_entry_and_column(support, entries, fields, where):
    with pytest.raises(Refused) as refused:
        import_csv(entries, PRIZES_CSV, csv_fields(**fields), acting_user=support)
    places = [w for w, _ in refused.value.problems]
    assert any(w.startswith(where) for w in places), places
    _nothing_stored()


# --------------------------------------------------------------------------------------------
# Proposal lines: the new components stored on the same bulk path, and replayed
# --------------------------------------------------------------------------------------------


def _lines(proposal):
    return {line.entry_id: line for line in PayoutLine.objects.filter(proposal=proposal)}


def test_rule_2_lines_carry_the_bounty_on_each_active_head(support):
    # Failed 40 minutes in, 4 active > 3 paid places: not in the money.
    proposal = draft_proposal(support, doc=knockout_doc(paid_with=False))
    lines = _lines(proposal)
    assert [lines[e].bounty_refund_cents for e in ("e1", "e2", "e3", "e4", "e5")] == [
        20_00,
        15_00,
        10_00,
        15_00,
        0,
    ]
    for line in lines.values():
        assert line.total_cents == (
            line.buy_in_refund_cents + line.next_prize_cents + line.equal_share_cents
            + line.chip_equity_cents + line.fee_refund_cents + line.bounty_refund_cents
        )  # fmt: skip
        assert line.refunds is None
    assert proposals.replay_proposal(proposal).matches


def _full_refund(support, doc):
    """Failed 10 minutes after the start: rule 1, every entry gets back what it paid."""
    doc["tournament"]["starts_at"] = (timezone.now() - timedelta(minutes=50)).isoformat()
    return draft_proposal(support, doc=doc)


def test_rule_1_lines_return_each_part_in_the_form_paid(support):
    proposal = _full_refund(support, knockout_doc())
    assert proposal.rule == "full_refund"
    lines = _lines(proposal)
    e1, e2, e5 = lines["e1"], lines["e2"], lines["e5"]
    assert (e1.buy_in_refund_cents, e1.fee_refund_cents, e1.bounty_refund_cents) == (
        30_00,
        3_00,
        10_00,
    )
    assert e1.refunds == [{"method": "ticket", "amount_cents": 43_00, "ticket_id": "TKT-1"}]
    assert e5.refunds == [
        {"method": "tournament_money", "amount_cents": 20_00},
        {"method": "cash", "amount_cents": 23_00},
    ]
    # Rebuys come back too, in cash: e2 paid no other way.
    assert (e2.buy_in_refund_cents, e2.fee_refund_cents, e2.total_cents, e2.refunds) == (
        60_00,
        6_00,
        76_00,
        None,
    )
    assert proposals.replay_proposal(proposal).matches
    figures = proposal.figures
    assert figures["refunds_by_method"] == {
        "cash": proposal.total_cents - 43_00 - 20_00,
        "ticket": 43_00,
        "tournament_money": 20_00,
        "tickets": 1,
    }


# --------------------------------------------------------------------------------------------
# The fingerprint: the SQL twin agrees with the engine byte for byte
# --------------------------------------------------------------------------------------------


def _every_component(support):
    """Proposals that between them have every component: a plain one (the form of before), a
    knockout under rule 2 with an equal share and rebuys, one under a policy that gives the
    buy-in back with equal shares, and a rule-1 knockout returned as paid."""
    return [
        draft_proposal(support, external_id="T-PLAIN"),
        draft_proposal(
            support, doc=knockout_doc("T-KO-RF", paid_with=False, policy="roll-forward-50-50")
        ),
        draft_proposal(
            support, doc=knockout_doc("T-KO-BB", paid_with=False, policy="buy-in-back-50-50")
        ),
        _full_refund(support, knockout_doc("T-KO-1")),
    ]


@postgres_only
def test_the_sql_twin_gives_the_engines_fingerprint_on_every_component(support):
    found = set()
    for proposal in _every_component(support):
        assert fingerprint.sql_fingerprint(proposal) == proposal.fingerprint
        assert fingerprint.python_fingerprint(proposal) == proposal.fingerprint
        for line in PayoutLine.objects.filter(proposal=proposal):
            found |= {
                name
                for name in (
                    "buy_in_refund",
                    "next_prize",
                    "equal_share",
                    "chip_equity",
                    "fee_refund",
                    "bounty_refund",
                )  # fmt: skip
                if getattr(line, f"{name}_cents")
            }
            found |= {"refunds"} if line.refunds else set()
    assert found >= {"buy_in_refund", "equal_share", "chip_equity", "fee_refund",
                     "bounty_refund", "refunds"}  # fmt: skip


def test_the_stored_lines_give_the_approved_fingerprint_on_both_databases(support):
    for proposal in _every_component(support):
        assert fingerprint.stored_fingerprint(proposal) == proposal.fingerprint


@postgres_only
def test_the_sql_twin_notices_a_changed_bounty(support):
    proposal = draft_proposal(support, doc=knockout_doc(paid_with=False))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {PayoutLine._meta.db_table} SET bounty_refund_cents = bounty_refund_cents - 1,"
            " chip_equity_cents = chip_equity_cents + 1 WHERE proposal_id = %s AND entry_id = 'e1'",
            [proposal.pk],
        )
    assert fingerprint.sql_fingerprint(proposal) != proposal.fingerprint


# --------------------------------------------------------------------------------------------
# Approval and posting
# --------------------------------------------------------------------------------------------


def test_approval_of_non_cash_refunds_posts_them(support, manager):
    # Approving non-cash refunds posts each part in the form it was paid.
    proposal = proposals.submit_proposal(_full_refund(support, knockout_doc()), acting_user=support)
    approved = proposals.approve_proposal(
        proposal, acting_user=manager, fingerprint=proposal.fingerprint
    )
    assert approved.status == PayoutProposal.Status.APPROVED
    assert ledger.post_proposal(proposal.pk) == "posted"
    proposal.refresh_from_db()
    credits = {c.key: c for c in Credit.objects.filter(proposal=proposal)}
    ticket = credits[f"proposal-{proposal.pk}/e1/ticket/TKT-1"]
    assert (ticket.method, ticket.ticket_id, ticket.amount_cents) == ("ticket", "TKT-1", 43_00)
    assert not any(c.entry_id == "e1" and c.method == "cash" for c in credits.values())
    money = credits[f"proposal-{proposal.pk}/e5/tournament_money"]
    cash = credits[f"proposal-{proposal.pk}/e5/cash_refund"]
    assert (money.method, money.amount_cents, cash.method, cash.amount_cents) == (
        "tournament_money",
        20_00,
        "cash",
        23_00,
    )
    assert sum(c.amount_cents for c in credits.values()) == proposal.total_cents
    total = PostedTotal.objects.get(proposal=proposal)
    assert (total.tickets, total.ticket_cents, total.tournament_money_cents) == (1, 43_00, 20_00)
    assert total.cash_cents == proposal.total_cents - 63_00


def test_a_knockout_paid_in_cash_is_approved_under_rule_1(support, manager):
    proposal = _full_refund(support, knockout_doc(paid_with=False))
    proposal = proposals.submit_proposal(proposal, acting_user=support)
    approved = proposals.approve_proposal(
        proposal, acting_user=manager, fingerprint=proposal.fingerprint
    )
    assert approved.status == PayoutProposal.Status.APPROVED


def test_posting_credits_each_bounty_as_cash_under_its_own_key(support, manager):
    proposal = posted_proposal(support, manager, doc=knockout_doc(paid_with=False))
    assert proposal.status == PayoutProposal.Status.POSTED
    bounty = Credit.objects.get(proposal=proposal, entry_id="e1", component="bounty_refund")
    assert bounty.key == f"proposal-{proposal.pk}/e1/bounty_refund"
    assert bounty.amount_cents == 20_00
    credits = Credit.objects.filter(proposal=proposal)
    assert sum(c.amount_cents for c in credits) == proposal.total_cents  # posted = approved
    total = PostedTotal.objects.get(proposal=proposal)
    assert total.bounty_refund_cents == 60_00 and total.cents == proposal.total_cents


def test_posting_credits_each_equal_share_under_its_own_key(support, manager):
    proposal = posted_proposal(
        support, manager, doc=knockout_doc(paid_with=False, policy="roll-forward-50-50")
    )
    shares = Credit.objects.filter(proposal=proposal, component="equal_share")
    lines = PayoutLine.objects.filter(proposal=proposal, equal_share_cents__gt=0)
    assert shares.count() == lines.count() == 4
    assert sum(c.amount_cents for c in shares) == sum(x.equal_share_cents for x in lines)
    assert PostedTotal.objects.get(proposal=proposal).cents == proposal.total_cents


def test_the_proposal_exports_carry_the_format_columns_only_where_used(client, support, auditor):
    knockout = submitted_proposal(support, doc=knockout_doc(paid_with=False))
    plain = submitted_proposal(support, external_id="T-PLAIN")
    client.force_login(auditor)

    def header(proposal):
        body = b"".join(client.get(f"/proposals/{proposal.pk}/export.csv").streaming_content)
        return next(csv.reader(io.StringIO(body.decode("utf-8-sig"))))

    assert {"bounty_refund", "bounty_paid", "bounty", "bounties_won", "rebuys_paid"} <= set(
        header(knockout)
    )
    assert "paid_with" not in header(knockout)
    assert not {"bounty_refund", "bounty", "rebuys_paid", "paid_with"} & set(header(plain))
    body = b"".join(client.get(f"/proposals/{knockout.pk}/export.json").streaming_content)
    e1 = json.loads(body)["lines"][0]
    assert (e1["entry_id"], e1["bounty_refund"], e1["bounty"], e1["equal_share"]) == (
        "e1",
        "20.00",
        "20.00",
        "0.00",
    )
    body = b"".join(client.get(f"/proposals/{plain.pk}/export.json").streaming_content)
    line = json.loads(body)["lines"][0]
    assert line["bounty_refund"] == "0.00" and "bounty" not in line and "refunds" not in line


def test_the_exports_of_a_rule_1_proposal_name_each_returned_ticket(client, support, auditor):
    proposal = _full_refund(support, knockout_doc())
    client.force_login(auditor)
    body = b"".join(client.get(f"/proposals/{proposal.pk}/export.csv").streaming_content)
    rows = {row["entry_id"]: row for row in csv.DictReader(io.StringIO(body.decode("utf-8-sig")))}
    assert rows["e1"]["refunds"] == "ticket TKT-1 43.00"
    assert rows["e5"]["paid_with"] == "tournament_money 20.00; cash 23.00"
    assert rows["e2"]["refunds"] == "cash"  # paid in cash, refunded in cash, as the page says
    body = b"".join(client.get(f"/proposals/{proposal.pk}/export.json").streaming_content)
    e1 = json.loads(body)["lines"][0]
    assert e1["refunds"] == [{"method": "ticket", "amount": "43.00", "ticket_id": "TKT-1"}]


def test_the_exports_say_cash_where_the_breakdown_does(client, support, auditor):
    """An entry without paid_with paid in cash (the spec's default), and a line without refunds
    is refunded in cash: the breakdown says "cash" in both columns, and so do the CSV and XLSX,
    rather than leaving the finance team a blank cell."""
    full_refund = _full_refund(support, knockout_doc())  # rule 1: returned as paid
    not_in_the_money = draft_proposal(support, doc=knockout_doc("T-KO-2"))  # rule 2: in cash
    client.force_login(auditor)
    for proposal in (full_refund, not_in_the_money):
        page = client.get(f"/proposals/{proposal.pk}/", {"show": ""}).content.decode()  # all
        shown = {
            entry: re.findall(r'<td class="payments">([^<]*)</td>', row)
            for entry, row in re.findall(r"<td>(e\d+)</td>(.*?)</tr>", page, re.S)
        }
        assert shown["e2"] == ["cash", "cash"] and shown["e1"][0] == "ticket TKT-1 USD 43.00"
        body = b"".join(client.get(f"/proposals/{proposal.pk}/export.csv").streaming_content)
        rows = {r["entry_id"]: r for r in csv.DictReader(io.StringIO(body.decode("utf-8-sig")))}
        response = client.get(f"/proposals/{proposal.pk}/export.xlsx")
        sheet = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content))).active
        header, *cells = [[c.value for c in row] for row in sheet.iter_rows()]
        records = {r[header.index("entry_id")]: r for r in cells}
        assert len(rows) == len(records) == len(shown) == 10
        for entry, (paid_with, refunds) in shown.items():
            for written in (
                (rows[entry]["paid_with"], rows[entry]["refunds"]),
                (
                    records[entry][header.index("paid_with")],
                    records[entry][header.index("refunds")],
                ),
            ):
                # The page writes the currency beside each amount; the files, the amount alone.
                assert written == tuple(
                    t.replace("tournament money", "tournament_money")
                    .replace(" + ", "; ")
                    .replace("USD ", "")
                    for t in (paid_with, refunds)
                ), (proposal.rule, entry)


# --------------------------------------------------------------------------------------------
# Statements: every component has its line, on the page and in the player's e-mail
# --------------------------------------------------------------------------------------------


def test_the_statement_page_names_the_ticket_returned_and_the_knockout_part(
    client, support, auditor
):
    proposal = _full_refund(support, knockout_doc())
    client.force_login(auditor)
    page = client.get(f"/proposals/{proposal.pk}/statement/e1/").content.decode()
    assert "Ticket TKT-1 returned" in page
    assert "Policy: " in page and "ultimatepoker-2026" in page
    text = proposals.statement(proposal, "e5")
    assert "tournament money" in text.lower()


def test_the_players_email_tells_the_bounty_and_the_equal_share(support, manager, settings):
    from django.core import mail

    from refunds_admin.notifications import services as notifications
    from refunds_admin.notifications import staff

    settings.STATEMENT_CHANNEL = "email"
    doc = knockout_doc(
        paid_with=False, policy="roll-forward-50-50", emails={"e1": "ann@example.test"}
    )
    proposal = posted_proposal(support, manager, doc=doc)
    staff.dispatch_events()
    notifications.deliver_statements(proposal.pk)
    ann = next(m for m in mail.outbox if m.to == ["ann@example.test"])
    assert ann.body == proposals.statement(proposal, "e1") + "\n"
    assert "The bounty on your head\t$20.00" in ann.body
    assert "shared equally among 4 players" in ann.body


def test_the_statement_says_how_the_policy_divides_the_amount_remaining(
    client, support, manager, auditor, settings
):
    """Under roll-forward-50-50 the amount remaining is half equal shares, half chip equity: the
    statement page (which prints), the player's e-mail and the support copy say so, where the
    default policy's statement still says it all goes to chip equity."""
    from django.core import mail

    from refunds_admin.notifications import services as notifications
    from refunds_admin.notifications import staff

    settings.STATEMENT_CHANNEL = "email"
    split = "Amount remaining, 50% in equal shares and 50% by chip equity"
    seed = "Amount remaining for chip equity disbursement"
    doc = snapshot_doc("T-ROLL", policy="roll-forward-50-50", emails={"e1": "ann@example.test"})
    rolled = posted_proposal(support, manager, doc=doc)
    default = posted_proposal(support, manager, external_id="T-SEED")
    client.force_login(auditor)
    page = client.get(f"/proposals/{rolled.pk}/statement/e1/").content.decode()
    assert split in page and seed not in page
    page = client.get(f"/proposals/{default.pk}/statement/e1/").content.decode()
    assert seed in page and split not in page
    staff.dispatch_events()
    notifications.deliver_statements(rolled.pk)
    (ann,) = mail.outbox
    assert split in ann.body and seed not in ann.body
    assert split in ann.alternatives[0][0]  # the HTML part too
    notifications.send_statement_copy(
        rolled, "p1", address="ann.new@example.test", acting_user=support
    )
    assert split in mail.outbox[-1].body and mail.outbox[-1].to == ["ann.new@example.test"]


def test_a_batch_with_non_cash_refunds_is_approved_and_posts_them(support, manager):
    # A batch with tickets is approved whole, and the wallet returns them.
    from tests.support.factories import approve_outage, prepared_outage

    ticket = {"method": "ticket", "amount": "33.00", "ticket_id": "TKT-9"}
    early = {  # 10 minutes of play before the outage: rule 1, e1 returned its ticket
        "starts_at": timezone.now() - timedelta(minutes=50),
        "entry_fields": {0: {"paid_with": [ticket]}},
    }
    outage = prepared_outage(support, docs={"OUT-2": early})
    approve_outage(outage, manager)
    proposal = PayoutProposal.objects.get(incident__tournament__external_id="OUT-2")
    assert proposal.status == PayoutProposal.Status.APPROVED
    assert ledger.post_proposal(proposal.pk) == "posted"
    credit = Credit.objects.get(proposal=proposal, entry_id="e1")
    assert (credit.method, credit.ticket_id, credit.amount_cents) == ("ticket", "TKT-9", 33_00)


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name.removesuffix(".scenario.json")
        for p in (Path(__file__).parent.parent / "data" / "examples").glob("*.scenario.json")
        if "refused" not in p.name
    ),
)
def test_the_approvers_pool_reconciles_on_every_worked_example(name):
    """Pool in = paid out, to the cent, under every rule and policy of the examples; the
    overlay the house keeps and the refunds per method beside it."""
    path = Path(__file__).parent.parent / "data" / "examples" / f"{name}.scenario.json"
    policy_file = path.with_name(f"{name}.policy.json")
    policy = parse_policy(policy_file.read_text()) if policy_file.exists() else None
    result = compute_proposal(parse_snapshot(path.read_text()), policy=policy)
    fig = figures.from_columns(
        result.columns, rule=result.rule, currency=result.currency, summary_cents=result.summary
    )
    assert fig["pool_in"] == fig["total"] == result.summary["total"]
    by_method = fig["refunds_by_method"]
    assert sum(v for k, v in by_method.items() if k != "tickets") == fig["total"]
    if name.startswith("15-"):
        assert fig["overlay_kept"] > 0
