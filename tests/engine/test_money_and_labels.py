"""One money module and one table of rule names: every screen, export, history sentence and
statement reads amounts and rule names the same way."""

import re
from pathlib import Path

import pytest

from refunds_admin.audit.display import describe
from refunds_admin.audit.models import AuditEvent
from refunds_admin.payouts.labels import RULE_TEXT, rule_label, rule_name
from refunds_admin.payouts.money import (
    AmountError,
    decimals_texts,
    display,
    format_cents,
    format_cents_column,
    split_cents_column,
    to_cents,
)
from refunds_admin.payouts.rules import RULES
from refunds_admin.web.templatetags.staff import money, money_symbol
from refunds_admin.web.templatetags.staff import rule_label as rule_label_filter
from tests.support.factories import approved_proposal

PACKAGE = Path(__file__).resolve().parents[2] / "refunds_admin"
# Cents turned into text by hand: `cents // 100`, `% 100`, `divmod(x, 100)`.
_BY_HAND = re.compile(r"(//|%)\s*100\b|divmod\([^)]*,\s*100\)")


def test_it_formats_amounts_for_files_and_for_people():
    assert format_cents(81533) == "815.33" and format_cents(-5) == "-0.05"
    assert format_cents(3015000, grouped=True) == "30,150.00"
    assert list(format_cents_column([0, 7, 81533])) == ["0.00", "0.07", "815.33"]
    whole, cents = split_cents_column([0, 7, 81533])
    texts = decimals_texts('"')
    assert [f"{w}{texts[c]}" for w, c in zip(whole, cents)] == ['0.00"', '0.07"', '815.33"']
    assert display(81533, "USD") == "$815.33"
    assert display(3015000, "USD", symbol=False) == "USD 30,150.00"
    assert display(100, "CHF") == "CHF 1.00"
    assert display(-54300, "GBP") == "-£543.00"
    assert display(1750000, "", drop_zero_cents=True) == "17,500"


def test_it_reads_cents_or_decimal_strings_and_refuses_floats():
    assert to_cents(815) == 815 and to_cents(" 30.5 ") == 3050 and to_cents("-815.33") == -81533
    assert to_cents(None) is None and to_cents("") is None
    with pytest.raises(TypeError):
        to_cents(8.15)
    with pytest.raises(AmountError):
        to_cents("8,15")


def test_it_gives_the_template_filters_the_engines_formatting():
    assert money(81533, "USD") == display(81533, "USD", symbol=False) == "USD 815.33"
    assert money("815.33", "USD") == "USD 815.33" and money(None, "USD") == ""
    assert money_symbol(81533, "USD") == display(81533, "USD") == "$815.33"


def test_it_names_every_rule_from_one_table():
    assert set(RULE_TEXT) == set(RULES)
    assert rule_label("not_in_the_money") == "Rule 2: not yet in the money"
    assert rule_label_filter("full_refund") == "Rule 1: full refund"
    assert rule_name("in_the_money") == "in the money"
    assert rule_label("") == "—" and rule_name("something_new") == "something_new"


@pytest.mark.django_db
def test_it_writes_the_history_with_the_same_names_and_amounts(support, manager):
    proposal = approved_proposal(support, manager)
    sentences = {
        e.action: describe(e) for e in AuditEvent.objects.filter(object_id=str(proposal.pk))
    }
    assert sentences["proposal.prepared"] == (
        f"{support.username} prepared proposal {proposal.pk} v1 (not yet in the money, 10 lines)"
    )
    total = display(proposal.total_cents, "USD", symbol=False)
    assert total == "USD 1,012.00"  # the prize pool of 1,000 plus four fees of 3 refunded
    assert sentences["proposal.approved"] == (
        f"{manager.username} approved proposal {proposal.pk} ({total}), to be paid into the "
        "app's own ledger"
    )


def test_it_turns_cents_into_text_only_in_the_money_module():
    by_hand = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "payouts" / "money.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _BY_HAND.search(line)
    ]
    assert by_hand == []
    assert _BY_HAND.search((PACKAGE / "payouts" / "money.py").read_text(encoding="utf-8"))
