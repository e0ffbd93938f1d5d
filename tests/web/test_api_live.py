"""The API against a real server (pytest-django's live server: a WSGI server thread on the test
database) with a real API token, driven from its OpenAPI document by two third-party tools:

- Schemathesis runs every operation with generated valid and invalid bodies and parameters and
  fails on a 5xx, an undocumented status code or content type, an answer that does not match its
  schema, a request answered without its token, or an answer slower than MAX_RESPONSE_SECONDS;
- openapi-python-client generates a client package from docs/openapi.json into a temporary
  directory, and that package imports a snapshot and records an outage.

docs/api.md records the Schemathesis counts of a run.
"""

import importlib
import json
import os
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from refunds_admin.incidents.models import Incident
from refunds_admin.outages.models import Outage
from refunds_admin.proposals.models import PayoutLine
from refunds_admin.tournaments.models import Snapshot, Tournament
from refunds_admin.tournaments.services import create_api_client
from tests.support.factories import posted_proposal, snapshot_doc

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
BIN = Path(sys.executable).parent
# What every answer must stay under, on a loaded 2-core CI machine (most take milliseconds).
MAX_RESPONSE_SECONDS = 5
# Test cases per operation and phase; with the coverage phase's own cases, about 950 requests,
# a minute or two on two cores. SCHEMATHESIS_MAX_EXAMPLES / SCHEMATHESIS_SEED change them.
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "20"))
SEED = os.environ.get("SCHEMATHESIS_SEED", "24")
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "ignored_auth",
    "unsupported_method",
)


def _real_clock_env():
    """The environment without libfaketime (the year-ahead run's LD_PRELOAD): Schemathesis is
    the platform's side, whose clock does not matter to the app, and under libfaketime its
    worker's timed waits on a moved monotonic clock ask the kernel for a wake-up 400 days away."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FAKETIME")}


@pytest.fixture
def platform(live_server, support):
    """The server and the platform's token (an API client acting as support)."""
    return live_server.url, create_api_client("platform", user=support)[1]


def test_schemathesis_finds_no_failure(platform, support, manager, tmp_path):
    url, token = platform
    # Something for the reads to find: a posted proposal, its tournament and its entries. Half
    # of the generated ids are these (the dictionaries below), half anything at all.
    proposal = posted_proposal(support, manager, external_id="ST-1")
    entries = list(PayoutLine.objects.filter(proposal=proposal).values_list("entry_id", flat=True))
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        "[dictionaries]\n"
        f"proposals = {{ values = [{proposal.pk}] }}\n"
        'tournaments = { values = ["ST-1"] }\n'
        f"entries = {{ values = {json.dumps(entries[:3])} }}\n"
        "[parameters]\n"
        '"path.proposal_id" = { dictionary = "proposals", probability = 0.5 }\n'
        '"path.external_id" = { dictionary = "tournaments", probability = 0.5 }\n'
        '"path.entry_id" = { dictionary = "entries", probability = 0.5 }\n'
    )
    tomllib.loads(config.read_text())  # (a typo here would only show as a CLI error)
    report = tmp_path / "report.json"
    run = subprocess.run(
        [
            str(BIN / "schemathesis"), "--config-file", str(config),
            "run", f"{url}/api/schema",
            "--header", f"Authorization: Bearer {token}",
            "--checks", ",".join(CHECKS),
            "--max-response-time", str(MAX_RESPONSE_SECONDS),
            "--max-examples", str(MAX_EXAMPLES),
            "--seed", SEED,
            "--workers", "1",
            "--request-timeout", "30",
            "--report", "json", "--report-json-path", str(report),
        ],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env=_real_clock_env(),
    )  # fmt: skip
    assert report.exists(), run.stdout[-5000:] + run.stderr[-3000:]
    result = json.loads(report.read_text())
    cases = result["test_cases"]
    # The figures docs/api.md quotes, in the test's output.
    print(
        f"Schemathesis: {result['operations']['tested']} operations, {cases['generated']} test "
        f"cases generated, {cases['with_failures']} with failures, in "
        f"{result['running_time']:.0f} s (seed {SEED})"
    )
    assert run.returncode == 0, run.stdout[-8000:]
    assert result["operations"]["tested"] == result["operations"]["total"] == 6
    assert result["failures"] == [] and result["errors"] == []
    assert cases["with_failures"] == 0 and cases["generated"] > 100
    # What it sent reached the app: the example snapshot of the document was imported.
    assert Tournament.objects.filter(external_id="UP-2026-11-29-001").exists()


def _generated_client(tmp_path):
    """openapi-python-client's package for docs/openapi.json, imported from tmp_path."""
    config = tmp_path / "generator.yml"
    config.write_text("post_hooks: []\n")  # (its default runs ruff over the output)
    out = tmp_path / "refunds_api_client"
    run = subprocess.run(
        [
            str(BIN / "openapi-python-client"), "generate", "--path", str(DOCUMENT),
            "--output-path", str(out), "--meta", "none", "--config", str(config),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0 and (out / "client.py").exists(), run.stdout + run.stderr
    assert "Warning" not in run.stdout, run.stdout  # every operation and model was generated
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.invalidate_caches()
        return importlib.import_module("refunds_api_client")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_generated_client_imports_a_snapshot_and_records_an_outage(platform, support, tmp_path):
    url, token = platform
    package = _generated_client(tmp_path)
    from refunds_api_client.api.outages import record_outage
    from refunds_api_client.api.reads import tournament_incidents
    from refunds_api_client.api.snapshots import import_snapshot
    from refunds_api_client.models import OutageRecorded, OutageReport, TournamentSnapshot

    sent = []  # the bodies as they left the client
    client = package.AuthenticatedClient(
        base_url=url,
        token=token,
        raise_on_unexpected_status=True,
        httpx_args={"event_hooks": {"request": [lambda request: sent.append(request.content)]}},
    )
    with client:  # (its keep-alive connection closed at the end)
        doc = snapshot_doc("GEN-1", entry_fields={0: {"paid_with": [
            {"method": "ticket", "amount": "33.00", "ticket_id": "TK-1"}]}})  # fmt: skip
        imported = import_snapshot.sync_detailed(
            client=client, body=TournamentSnapshot.from_dict(doc)
        )
        assert imported.status_code == 201, imported.content
        snapshot = Snapshot.objects.get(tournament__external_id="GEN-1")
        # Stored byte for byte as the client sent it, and meaning what the platform meant.
        assert snapshot.document.encode() == sent[0]
        stored = json.loads(snapshot.document)
        assert [e["entry_id"] for e in stored["entries"]] == [e["entry_id"] for e in doc["entries"]]
        assert stored["entries"][0]["paid_with"] == doc["entries"][0]["paid_with"]
        assert [e.get("chips") for e in stored["entries"]] == [
            e.get("chips") for e in doc["entries"]
        ]
        assert snapshot.source == "api" and snapshot.imported_by == support
        assert imported.parsed.snapshot.sha256 == snapshot.sha256
        assert imported.parsed.snapshot.entries == len(doc["entries"]) == 10
        assert imported.parsed.snapshot.active == 4

        failed_at = (timezone.now() - timedelta(minutes=12)).replace(microsecond=0)
        report = OutageReport.from_dict(
            {
                "failed_at": failed_at.isoformat(),
                "cause": "network",
                "description": "Uplink lost",
                "external_ids": ["GEN-1"],
            }
        )
        recorded = record_outage.sync_detailed(client=client, body=report)
        assert recorded.status_code == 201, recorded.content
        assert isinstance(recorded.parsed, OutageRecorded)
        outage = Outage.objects.get()
        assert outage.pk == recorded.parsed.id and outage.failed_at == failed_at
        assert outage.cause == "network" and outage.description == "Uplink lost"
        incident = Incident.objects.get(tournament__external_id="GEN-1")
        assert incident.status == "open" and incident.recorded_by == support

        # ...and reads it back through the same client.
        incidents = tournament_incidents.sync(client=client, external_id="GEN-1")
        assert [i.id for i in incidents.incidents] == [incident.pk]

        # A refusal comes back as the documented error, with its field paths.
        bad = doc | {"tournament": {**doc["tournament"], "fee": "3.001"}}
        refused = import_snapshot.sync_detailed(
            client=client, body=TournamentSnapshot.from_dict(bad)
        )
        assert refused.status_code == 400
        assert "tournament.fee" in [p.field for p in refused.parsed.problems]
