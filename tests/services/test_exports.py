"""Downloads a spreadsheet cannot run and a browser can save; statements for any id."""

import csv
import io
from urllib.parse import quote

import pytest

from refunds_admin.proposals import services as proposals
from refunds_admin.web.downloads import attachment, neutralise
from tests.support.factories import draft_proposal, submitted_proposal

pytestmark = pytest.mark.django_db

HOSTILE = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]


def _rows(response):
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text)))


def test_it_neutralises_formulas_in_the_proposal_csv(client, support):
    # TAB and CR cannot reach an id or a name (the import refuses control characters); they are
    # covered by test_it_neutralises_every_formula_start below.
    printable = HOSTILE[:4]
    fields = {i: {"screen_name": s, "player_id": f"{s}-{i}"} for i, s in enumerate(printable)}
    proposal = draft_proposal(support, entry_fields=fields)
    client.force_login(support)
    rows = _rows(client.get(f"/proposals/{proposal.pk}/export.csv"))
    header = rows[0]
    by_entry = {row[header.index("entry_id")]: dict(zip(header, row)) for row in rows[1:]}
    for i, hostile in enumerate(printable):
        row = by_entry[f"e{i + 1}"]
        assert row["screen_name"] == "'" + hostile  # shown as text, not run
        assert row["player_id"] == "'" + f"{hostile}-{i}"
    # Amounts and counts stay numbers.
    assert by_entry["e1"]["chips"] == "40000" and by_entry["e1"]["total"][0].isdigit()


def test_it_neutralises_formulas_in_the_audit_csv(client, support, manager):
    proposal = submitted_proposal(support)
    proposals.reject_proposal(proposal, acting_user=manager, reason="=cmd|' /C calc'!A0")
    client.force_login(manager)
    rows = _rows(client.get("/audit/export.csv"))
    reasons = [row[8] for row in rows[1:] if row[3] == "proposal.rejected"]
    assert reasons == ["'=cmd|' /C calc'!A0"]


@pytest.mark.parametrize("cell", HOSTILE)
def test_it_neutralises_every_formula_start(cell):
    assert neutralise(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["ok", "e1", "30.00", "", 5, -5, "a=b"])
def test_it_leaves_harmless_cells_alone(cell):
    assert neutralise(cell) == cell


def test_it_names_downloads_safely_with_an_ascii_fallback(client, support):
    proposal = draft_proposal(support, external_id='Tür "7"; a/b\\c')
    client.force_login(support)
    for ext in ("csv", "json"):
        header = client.get(f"/proposals/{proposal.pk}/export.{ext}")["Content-Disposition"]
        fallback = header.split('filename="')[1].split('"')[0]
        assert fallback == f"proposal-T_r_7_a_b_c-v1.{ext}"
        assert header.endswith(
            "filename*=UTF-8''" + quote(f'proposal-Tür "7"; a/b\\c-v1.{ext}', safe="")
        )


def test_it_keeps_plain_names_plain():
    assert attachment("audit.csv") == 'attachment; filename="audit.csv"'


@pytest.mark.parametrize("entry_id", ["a/b", "tables/7/seat/3", "x?y#z", "玩家 1"])
def test_it_shows_the_statement_of_an_entry_whose_id_has_a_slash(client, support, entry_id):
    proposal = draft_proposal(support, entry_fields={0: {"entry_id": entry_id}})
    client.force_login(support)
    page = client.get(f"/proposals/{proposal.pk}/")
    link = f"/proposals/{proposal.pk}/statement/{quote(entry_id, safe='')}/"
    assert link in page.content.decode()
    response = client.get(link)
    assert response.status_code == 200
    assert response.context["line"].entry_id == entry_id


def test_it_names_the_finance_report_download_safely(client, manager):
    client.force_login(manager)
    response = client.get("/reports/export.csv")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="refunds-')
    assert _rows(response)[0][0] == "month"


def _export_urls():
    """Every CSV download the site has: the URL names whose route ends in .csv."""
    from django.urls import get_resolver

    names = []
    for pattern in get_resolver().url_patterns:
        for sub in getattr(pattern, "url_patterns", [pattern]):
            if str(sub.pattern).endswith(".csv") and sub.name:
                names.append(sub.name)
    return sorted(names)


def test_every_csv_export_neutralises_formulas(client, support, manager):
    """Hostile tournament ids, names, screen names and reasons, then every .csv view of the site:
    no cell of any of them starts like a formula."""
    from django.urls import reverse

    from tests.support.factories import approve_outage, prepared_outage

    ids = ["=OUT1", "+OUT2", "@OUT3"]
    docs = {x: {"name": '=HYPERLINK("http://x","y")'} for x in ids}
    o = prepared_outage(support, external_ids=ids, docs=docs)
    approve_outage(o, manager)
    fields = {0: {"screen_name": "=1+2", "player_id": "-3+4"}}
    proposal = draft_proposal(support, entry_fields=fields, external_id="=T")
    proposals.submit_proposal(proposal, acting_user=support)
    proposals.reject_proposal(proposal, acting_user=manager, reason="=cmd|' /C calc'!A0")
    args = {
        "outage_report_csv": [o.pk],
        "proposal_export_csv": [proposal.pk],
        "audit_export": [],
        "finance_report_csv": [],
    }
    assert _export_urls() == sorted(args), "a new CSV export: add it here"
    client.force_login(manager)
    for name, url_args in args.items():
        response = client.get(reverse(name, args=url_args))
        assert response.status_code == 200, name
        body = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode("utf-8-sig")
        cells = [c for row in csv.reader(io.StringIO(body)) for c in row]
        assert cells, name
        assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))], name
        assert not [c for c in cells if c.startswith("-") and not c[1:2].isdigit()], name
    report = client.get(reverse("outage_report_csv", args=[o.pk])).content.decode("utf-8-sig")
    assert "'=OUT1" in report and "'=HYPERLINK" in report


def _body(response):
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_every_csv_export_starts_with_the_utf8_bom_and_keeps_non_ascii_names(
    client, support, manager
):
    """Excel reads a CSV as UTF-8 only with the byte order mark first; without it "Jürgen" and
    "玩家" arrive garbled. Every .csv view of the site, a non-ASCII name through each."""
    from django.urls import reverse

    from tests.support.factories import approve_outage, prepared_outage

    name = "Jürgen 玩家 Ørsted"
    o = prepared_outage(support, external_ids=["ÜBER-1"], docs={"ÜBER-1": {"name": name}})
    approve_outage(o, manager)
    proposal = draft_proposal(support, entry_fields={0: {"screen_name": name}})
    proposals.submit_proposal(proposal, acting_user=support)
    proposals.reject_proposal(proposal, acting_user=manager, reason=f"{name} was paid twice")
    args = {
        "outage_report_csv": [o.pk],
        "proposal_export_csv": [proposal.pk],
        "audit_export": [],
        "finance_report_csv": [],
    }
    assert _export_urls() == sorted(args), "a new CSV export: add it here"
    client.force_login(manager)
    for url_name, url_args in args.items():
        body = _body(client.get(reverse(url_name, args=url_args)))
        assert body.startswith(b"\xef\xbb\xbf"), url_name
        assert not body[3:].startswith(b"\xef\xbb\xbf"), url_name  # once, not per chunk
        text = body.decode("utf-8-sig")
        assert text[0] != "\ufeff", url_name
        if url_name != "finance_report_csv":  # the finance report has no names in it
            assert name in text, url_name
    rows = list(
        csv.DictReader(
            io.StringIO(
                _body(client.get(f"/proposals/{proposal.pk}/export.csv")).decode("utf-8-sig")
            )
        )
    )
    assert rows[0]["screen_name"] == name and "currency" in rows[0]
