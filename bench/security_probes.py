"""Replay the hostile probes of issue 22 against a throwaway test database: one line per probe
(`held` or `BROKEN` and what happened) and a count. Exits 1 when any probe got through.

    DEBUG=1 .venv/bin/python bench/security_probes.py          # SQLite
    DATABASE_URL=postgres://... .venv/bin/python bench/security_probes.py   # + database probes

It builds its data through the app's services (tests/support/factories.py), as the tests do, and talks
to the app through Django's test client (the views, middleware and API as served).
"""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
os.environ.setdefault("DEBUG", "1")  # development settings (DEBUG is off by default)

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

RESULTS = []


class _Rollback(Exception):
    pass


def probe(name):
    """Run the probe in a transaction rolled back afterwards; it returns (held, detail)."""

    def run(fn):
        try:
            with transaction.atomic():
                held, detail = fn()
                raise _Rollback
        except _Rollback:
            pass
        except Exception as exc:  # a probe that crashes has not shown that the defence held
            held, detail = False, f"crashed: {type(exc).__name__}: {exc}"[:200]
        RESULTS.append(held)
        print(f"{'held  ' if held else 'BROKEN'} {name}: {detail}", flush=True)
        return fn

    return run


def user(name, role=None, device=False):
    from tests.support.factories import enrol_device

    u = User.objects.create_user(name, password="pw-" + name)
    if role:
        u.groups.add(Group.objects.get_or_create(name=role)[0])
    if device:
        enrol_device(u)
    return u


def verified(client, u):
    """A completed sign-in: the password and then a code (the session is verified)."""
    from django_otp import DEVICE_ID_SESSION_KEY

    from refunds_admin.accounts import mfa

    client.force_login(u)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = mfa.confirmed_device(u).persistent_id
    session.save()
    return client


def _refused_to_app_role(sql):
    """(held, what happened) for `sql` run as the app's database role, created and granted its
    rights here as the owner would (`grant_app_role`), inside the probe's transaction."""
    from django.core.management import call_command

    role = f"refunds_app_{connection.settings_dict['NAME']}"[:63]
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" NOLOGIN')
    call_command("grant_app_role", role, stdout=open(os.devnull, "w"))
    with connection.cursor() as cursor:
        cursor.execute(f'SET LOCAL ROLE "{role}"')
        try:
            with transaction.atomic():
                cursor.execute(sql)
        except Exception as exc:
            return True, str(exc).splitlines()[0][:100]
    return False, "done"


def main():
    from tests.support import factories as f

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, keepdb=False)
    try:
        with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
            run_probes(f)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    broken = RESULTS.count(False)
    print(f"{len(RESULTS) - broken}/{len(RESULTS)} probes held, {broken} broken")
    return 1 if broken else 0


def run_probes(f):  # noqa: C901 (one probe after the other)
    from django.core.exceptions import PermissionDenied

    from refunds_admin.incidents import services as incidents
    from refunds_admin.incidents.models import Incident
    from refunds_admin.outages import services as outages
    from refunds_admin.proposals import services as proposals
    from refunds_admin.proposals.models import PayoutProposal
    from refunds_admin.tournaments.services import create_api_client

    def people():
        return (
            user("sam", "support"),
            user("maria", "manager", device=True),
            user("otto", "manager", device=True),
        )

    # Findings 1 and 2: every money decision needs an enrolled, verified second factor.
    for who in ("without an authenticator", "signed in with the password alone"):
        for decision in ("outage_site_wide", "outage_not_resumable", "outage_review",
                         "incident_site_wide", "incident_not_resumable", "proposal_reject",
                         "proposal_approval"):  # fmt: skip

            @probe(f"{decision} by a manager {who}")
            def _(decision=decision, who=who):
                sam, maria, _otto = people()
                if who.startswith("without"):
                    maria.totpdevice_set.all().delete()
                proposal = f.submitted_proposal(sam)
                incident = f.open_incident(sam, external_id="T-OPEN")
                outage = f.outage(sam, external_ids=("O-1", "O-2"))
                target = {"outage": outage.pk, "incident": incident.pk, "proposal": proposal.pk}
                data = {"reason": "x", "justification": "x", "fingerprint": proposal.fingerprint,
                        "password": "pw-maria", "otp_token": "000000"}  # fmt: skip
                c = Client()
                c.force_login(maria)
                url = f"/{decision.split('_')[0]}s/{target[decision.split('_')[0]]}/"
                url += {"site_wide": "site-wide/", "not_resumable": "not-resumable/",
                        "review": "review/", "reject": "reject/", "approval": "approval/"}[
                    decision.split("_", 1)[1]]  # fmt: skip
                response = c.post(url, data)
                changed = (
                    PayoutProposal.objects.exclude(status="submitted").exists()
                    or Incident.objects.filter(site_wide_issue=True).exists()
                    or Incident.objects.exclude(status="open").exclude(pk=proposal.incident_id)
                    .exists()
                )  # fmt: skip
                where = response.get("Location", "")
                return (not changed and "two-factor" in where), f"{response.status_code} {where}"

    # Finding 6: four eyes against the managers who chose the rule.
    @probe("approval by the manager who confirmed the site-wide finding")
    def _():
        sam, maria, _otto = people()
        incident = incidents.confirm_site_wide_issue(
            f.cancelled_incident(sam), justification="lag", acting_user=maria
        )
        p = proposals.submit_proposal(proposals.prepare_proposal(incident, acting_user=sam),
                                      acting_user=sam)  # fmt: skip
        try:
            proposals.approve_proposal(p, acting_user=maria, fingerprint=p.fingerprint)
        except PermissionDenied as exc:
            return True, str(exc)
        return False, "approved"

    @probe("batch approval by the manager who declared the rest of the outage not resumable")
    def _():
        from refunds_admin.proposals import batches

        sam, maria, _otto = people()
        o = f.outage(sam, failed_ago=timedelta(minutes=10))
        outages.declare_rest_not_resumable(o, reason="gone", acting_user=maria)
        batches.run_prepare(batches.start_prepare(o, acting_user=sam).pk)
        try:
            f.approve_outage(o, maria)
        except PermissionDenied as exc:
            return True, str(exc)[:120]
        return False, "approved"

    # Tenth session's insider trial: four eyes over the facts, not only the rule.
    def prepared_by_sam_approved_by_maria(incident, sam, maria):
        """(held, detail): sam prepares and submits, maria tries to approve."""
        p = proposals.submit_proposal(proposals.prepare_proposal(incident, acting_user=sam),
                                      acting_user=sam)  # fmt: skip
        try:
            proposals.approve_proposal(p, acting_user=maria, fingerprint=p.fingerprint)
        except PermissionDenied as exc:
            return True, str(exc)[:120]
        return False, "approved"

    @probe("approval by the manager who imported the snapshot it was computed from")
    def _():
        sam, maria, _otto = people()
        # maria uploads the snapshot and records the incident.
        return prepared_by_sam_approved_by_maria(f.cancelled_incident(maria), sam, maria)

    @probe("a re-import naming a more generous policy, then approval by its importer")
    def _():
        sam, maria, _otto = people()
        incident = f.cancelled_incident(sam)
        # The same facts, another policy named (the default is ultimatepoker-2026).
        f.import_doc(maria, f.snapshot_doc(incident.tournament.external_id,
                                          policy="rollback-before-first-bust"))  # fmt: skip
        return prepared_by_sam_approved_by_maria(incident, sam, maria)

    # Finding 4: every CSV export neutralised.
    @probe("outage report CSV with =OUT1 and =HYPERLINK names")
    def _():
        sam, maria, _otto = people()
        o = f.prepared_outage(sam, external_ids=("=OUT1",),
                              docs={"=OUT1": {"name": '=HYPERLINK("http://x")'}})  # fmt: skip
        c = Client()
        c.force_login(sam)
        body = c.get(f"/outages/{o.pk}/report.csv").content.decode()
        live = [line for line in body.splitlines() if line.startswith("=") or ",=" in line]
        return not live, f"{len(live)} live formula rows"

    # Finding 5: the admin and a password set by a superuser.
    @probe("admin shows or rewrites a manager's TOTP key")
    def _():
        from refunds_admin.accounts import mfa

        root = User.objects.create_superuser("root", password="pw-root")
        f.enrol_device(root)
        _sam, maria, _otto = people()
        device = mfa.confirmed_device(maria)
        c = verified(Client(), root)
        page = c.get(f"/admin/otp_totp/totpdevice/{device.pk}/change/").content.decode()
        edit = c.post(f"/admin/otp_totp/totpdevice/{device.pk}/change/",
                      {"user": maria.pk, "name": "x", "key": "00" * 20})  # fmt: skip
        return (device.key not in page and edit.status_code == 403), f"edit {edit.status_code}"

    @probe("approval as a manager whose password a superuser set")
    def _():
        from refunds_admin.audit import context

        root = User.objects.create_superuser("root", password="pw-root")
        sam, maria, _otto = people()
        p = f.submitted_proposal(sam)
        with context.acting(root):
            maria.set_password("known-to-root")
            maria.save()
        try:
            proposals.approve_proposal(p, acting_user=maria, fingerprint=p.fingerprint)
        except PermissionDenied as exc:
            return True, str(exc)[:120]
        return False, "approved"

    # Finding 7: /api/outages.
    def api(body, token, content_type="application/json"):
        return Client().post("/api/outages", data=body, content_type=content_type,
                             headers={"Authorization": f"Bearer {token}"})  # fmt: skip

    @probe("/api/outages: a token whose user has no role, with a 100k-deep body")
    def _():
        sam, _m, _o = people()
        token = create_api_client("p", user=sam)[1]
        sam.groups.clear()
        r = api("[" * 100_000, token)
        return r.status_code == 403, str(r.status_code)

    @probe("/api/outages: a deactivated user's token")
    def _():
        sam, _m, _o = people()
        token = create_api_client("p", user=sam)[1]
        sam.is_active = False
        sam.save()
        r = api('{"external_ids": ["X"]}', token)
        return r.status_code == 401, str(r.status_code)

    @probe("/api/outages: 100k-deep JSON")
    def _():
        sam, _m, _o = people()
        r = api("[" * 100_000 + "]" * 100_000, create_api_client("p", user=sam)[1])
        return r.status_code == 400, str(r.status_code)

    @probe("/api/outages: a list of 1M ids")
    def _():
        sam, _m, _o = people()
        body = '{"external_ids": [' + ",".join(['"x"'] * 1_000_000) + "]}"
        r = api(body, create_api_client("p", user=sam)[1])
        return r.status_code in (400, 413) and len(r.content) < 4000, (
            f"{r.status_code}, {len(r.content)} bytes"
        )

    @probe("/api/outages: 300 unknown ids give at most 50 problems and a count")
    def _():
        sam, _m, _o = people()
        ids = ",".join(f'"N-{i}"' for i in range(300))
        body = '{"cause": "x", "failed_at": "x", "external_ids": [' + ids + "]}"
        r = api(body, create_api_client("p", user=sam)[1]).json()
        return len(r["problems"]) == 50 and r.get("problems_total", 0) > 300, (
            f"{len(r['problems'])} listed of {r.get('problems_total')}"
        )

    # Finding 11: no-store on the enrolment page.
    @probe("the enrolment page (the TOTP secret) is cacheable")
    def _():
        new = user("nina", "manager")
        c = Client()
        c.force_login(new)
        r = c.get("/accounts/two-factor/")
        return "no-store" in r.get("Cache-Control", ""), r.get("Cache-Control", "none")

    # Finding 3: password reset.
    @probe("password reset: 6 requests for one address in an hour")
    def _():
        from django.core.cache import cache

        cache.clear()
        with override_settings(PASSWORD_RESET_MIN_SECONDS=0):
            codes = [Client().post("/accounts/password_reset/", {"email": "a@example.com"})
                     .status_code for _ in range(6)]  # fmt: skip
        return codes[-1] == 429, str(codes)

    # Findings 10 and 3: production start-up.
    def start(env):
        base = {"PATH": "/usr/bin:/bin", "SECRET_KEY": "k" * 50, "ALLOWED_HOSTS": "x",
                "WALLET": "ledger", "DJANGO_SETTINGS_MODULE": "refunds_admin.settings"}  # fmt: skip
        code = (
            "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
        )
        return subprocess.run([sys.executable, "-c", code], env={**base, **env}, cwd=ROOT,
                              capture_output=True, text=True)  # fmt: skip

    @probe("a process started without DEBUG runs with DEBUG on")
    def _():
        r = start({"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"})
        return r.stdout.strip() == "False", r.stdout.strip() or r.stderr[-100:]

    @probe("production with the console e-mail backend (reset links in the logs)")
    def _():
        r = start({"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"})
        return r.returncode != 0, "refused to start" if r.returncode else "started"

    # Finding 8: the database role (PostgreSQL).
    if connection.vendor == "postgresql":
        statements = [
            "ALTER TABLE audit_auditevent DISABLE TRIGGER ALL",
            "TRUNCATE audit_auditevent",
            "UPDATE audit_auditevent SET reason = 'x'",
            "DELETE FROM audit_auditevent",
            "TRUNCATE ledger_credit",
            "ALTER TABLE proposals_payoutproposal DROP CONSTRAINT approver_is_not_preparer",
            "SET session_replication_role = replica",
            # A hashless event, which verify_audit would take for one older than the chain.
            "INSERT INTO audit_auditevent (id, created_at, actor_name, action, object_type, "
            "object_id, tournament_external_id, player_ids, reason, request_id, prev_hash, hash) "
            "VALUES (1, now(), 'maria', 'proposal.approved', 'payoutproposal', '1', '', '[]', "
            "'', '', '', '')",
        ]
        for sql in statements:

            @probe(f"as the app's database role: {sql}")
            def _(sql=sql):
                return _refused_to_app_role(sql)

    @probe("approval of lines changed behind the app's back")
    def _():
        from django.db.models import F

        from refunds_admin.errors import Refused
        from refunds_admin.proposals.models import PayoutLine

        sam, maria, _otto = people()
        p = f.submitted_proposal(sam)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = replica")
        PayoutLine.objects.filter(proposal=p, position=0).update(
            fee_refund_cents=F("fee_refund_cents") + 1, total_cents=F("total_cents") + 1
        )
        try:
            proposals.approve_proposal(p, acting_user=maria, fingerprint=p.fingerprint)
        except Refused as exc:
            return True, str(exc)[:100]
        return False, "approved"

    @probe("an audit event rewritten behind the app's back goes unnoticed")
    def _():
        from django.core.management import call_command
        from django.core.management.base import CommandError

        from refunds_admin.audit.models import AuditEvent

        sam, _m, _o = people()
        f.open_incident(sam)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = replica")
        AuditEvent.objects.filter(action="incident.recorded").update(reason="nothing")
        try:
            call_command("verify_audit", stdout=open(os.devnull, "w"))
        except CommandError as exc:
            return exc.returncode == 1, str(exc)[:100]
        return False, "verify_audit said intact"

    # The seventh session's insider probe (2026-12-05).
    @probe("a site-wide finding applied by adding a tournament, password alone")
    def _():
        sam, maria, otto = people()
        outage = f.outage(sam, external_ids=("O-1", "O-2"))
        outages.confirm_site_wide_issue(outage, justification="DC down", acting_user=maria)
        late = f.import_doc(sam, external_id="O-LATE").tournament
        c = Client()
        c.force_login(otto)  # the password alone: no verified device in the session
        response = c.post(f"/outages/{outage.pk}/add/", {"tournament": late.pk})
        added = Incident.objects.filter(tournament=late).exists()
        return not added, f"{response.status_code} {response.get('Location', '')}"

    @probe("an audit event appended without the chain's key fits it")
    def _():
        from django.core.management import call_command
        from django.core.management.base import CommandError

        from refunds_admin.audit import chain
        from refunds_admin.audit.models import AuditEvent

        sam, _m, _o = people()
        f.open_incident(sam)
        last = AuditEvent.objects.order_by("-id").first()
        forged = AuditEvent(
            created_at=last.created_at, actor_name="maria", action="proposal.approved",
            object_type="payoutproposal", object_id="1", player_ids=[], reason="forged",
            prev_hash=last.hash,
        )  # fmt: skip
        forged.hash = chain.unkeyed_digest(forged, forged.prev_hash)
        forged.save(force_insert=True)
        try:
            call_command("verify_audit", stdout=open(os.devnull, "w"))
        except CommandError as exc:
            return exc.returncode == 1, str(exc)[:100]
        return False, "verify_audit said intact"

    if connection.vendor == "postgresql":

        @probe("as the app's database role: an approved proposal set back to draft")
        def _():
            sam, maria, _o = people()
            approved = f.approved_proposal(sam, maria)
            return _refused_to_app_role(
                f"UPDATE proposals_payoutproposal SET status = 'draft' WHERE id = {approved.pk}"
            )


if __name__ == "__main__":
    sys.exit(main())
