"""Found by the second operator's trial: the import page's CSV form had no way to name the
tournament's cancellation policy, so every tournament imported from a chip-count export ran
under the default policy until a manager changed it (and, having chosen the rule, could then
not approve its proposal). The form now takes `tournament.policy` as the JSON upload does."""

import pytest
from django.urls import reverse

from refunds_admin.tournaments.models import Tournament
from tests.support.pages import import_csv

pytestmark = pytest.mark.django_db

ENTRIES = "entry_id,player_id,status,chips\ne1,p1,active,40000\ne2,p2,active,30000\n"
PRIZES = "place,amount\n1,500.00\n2,300.00\n"


def _post(client, **extra):
    return import_csv(client, ENTRIES, PRIZES, external_id="CSV-POLICY-1", **extra)


def test_the_csv_form_offers_the_known_policies(client, support):
    client.force_login(support)
    page = client.get(reverse("tournament_import")).content.decode()
    assert 'name="policy"' in page and 'value="roll-forward-50-50"' in page


def test_a_csv_import_names_its_policy(client, support):
    client.force_login(support)
    response = _post(client, policy="roll-forward-50-50")
    assert response.status_code == 302, response.content.decode()[:2000]
    tournament = Tournament.objects.get(external_id="CSV-POLICY-1")
    assert tournament.policy_version.policy_id == "roll-forward-50-50"
    assert '"policy": "roll-forward-50-50"' in tournament.snapshots.get().document


def test_a_csv_import_without_a_policy_gets_the_default(client, support):
    client.force_login(support)
    assert _post(client, policy="").status_code == 302
    tournament = Tournament.objects.get(external_id="CSV-POLICY-1")
    assert tournament.policy_version.policy_id == "ultimatepoker-2026"
