"""A player's statement in the policy's own layout ("Your share of remaining amount (48,200/
1,500,000 X $17,500) $562.33 ..."). Built once: the command line's --explain, the staff's screens
and the text sent to players all use it. Every component of the line has its own line, and every
word comes from labels.STATEMENT_TEXT.
"""

from .labels import STATEMENT_TEXT, rule_label
from .money import display
from .policy import DEFAULT_POLICY_ID
from .rules import FULL_REFUND, IN_THE_MONEY, Proposal
from .snapshot import ACTIVE, CASH, TICKET


def _text(key: str, **values: object) -> str:
    return STATEMENT_TEXT[key].format(**values)


def statement_lines(proposal: Proposal, entry_id: str) -> list[tuple[str, str]]:
    """[(label, amount text or "")] for one entry; a ("", "") pair is a blank line."""
    line = proposal.line_for(entry_id)
    s = proposal.summary
    cur = proposal.currency
    policy = proposal.terms

    def money(cents: int, short: bool = False) -> str:
        return display(cents, cur, drop_zero_cents=short)

    tournament = f"{proposal.external_id} {proposal.name}".rstrip()
    out = [
        (_text("cancelled", tournament=tournament), ""),
        (_text("entry", entry_id=line.entry_id, player_id=line.player_id), ""),
        (_text("rule", rule=rule_label(proposal.rule)), ""),
        (
            _text(
                "policy",
                title=policy.title,
                policy_id=proposal.policy.id,
                version=proposal.policy.version,
            ),
            "",
        ),
        ("", ""),
    ]
    rebuys = proposal.rebought(line.entry_id)
    if proposal.rule == FULL_REFUND:
        out.append((_full_refund_reason(proposal) + _refunded_text(proposal), ""))
        out += [("", ""), (_text("your_payout"), "")]
        refund_key = "buy_in_and_rebuys_refund" if rebuys else "buy_in_refund"
        out.append((_text(refund_key), money(line.buy_in_refund)))
        out.append((_text("fees_refund" if rebuys else "fee_refund"), money(line.fee_refund)))
        if line.bounty_refund:
            out.append((_text("bounty_paid_refund"), money(line.bounty_refund)))
        out.append((_text("total"), money(line.total)))
        if line.refunds is not None:
            out += [("", ""), (_text("returned_as_paid"), "")]
            for p in line.refunds:
                if p.method == TICKET:
                    label = _text("ticket", ticket_id=p.ticket_id)
                elif p.method == CASH:
                    label = _text("cash")
                else:
                    label = _text("tournament_money")
                out.append((label, money(p.amount)))
        return out

    n = s["active"]
    guaranteed = s["guaranteed"]
    in_money = proposal.rule == IN_THE_MONEY
    returned = policy.not_in_the_money_returned
    # "X for each" only when every active entry really got X: entries can have paid different
    # buy-ins (tickets, freerolls), and then an even total says nothing about each one.
    per_entry = proposal.active_buy_in_refund
    if in_money:
        out.append((_text("remaining_pool"), money(s["remaining_pool"])))
        out.append(
            (
                _text("next_prize_each", each=money(guaranteed // n, True), n=f"{n:,}"),
                money(guaranteed),
            )
        )
    else:
        out.append((_text("total_pool"), money(s["remaining_pool"] + s.get("overlay_kept", 0))))
        if s.get("overlay_kept"):
            out.append((_text("overlay_kept"), "-" + money(s["overlay_kept"])))
        if returned == "nothing":
            out.append((_text("nothing_returned"), ""))
        elif per_entry is not None:
            label = _text("buy_in_each", each=money(per_entry, True), n=f"{n:,}")
            out.append((label, money(guaranteed)))
        else:
            out.append((_text("buy_ins", n=f"{n:,}"), money(guaranteed)))
    equal_pool = s.get("equal_shares", 0)
    percent = policy.equal_share_percent(in_money)
    out.append((_equity_pool_label(percent), money(s["equity_pool"])))
    if equal_pool:
        each, left = divmod(equal_pool, n)
        label = _text(
            "equal_pool",
            percent=percent,
            pool=money(s["equity_pool"]),
            n=f"{n:,}",
            each=money(each),
        )
        if left:
            left_over = (
                _text("equal_left_one") if left == 1 else _text("equal_left", cents=f"{left:,}")
            )
            label += f" ({left_over})"
        out.append((label, money(equal_pool)))
        out.append((_text("chip_pool", percent=100 - percent), money(s["chip_equity"])))
    if s["capped_entries"]:
        capped_total = s["chip_equity"] - proposal.equity_shared
        cap = money(s["first_place_cap"])
        capped_label = (
            _text("capped_pool_one", cap=cap)
            if s["capped_entries"] == 1
            else _text("capped_pool", count=f"{s['capped_entries']:,}", cap=cap)
        )
        out.append((capped_label, money(capped_total)))
        out.append((_text("shared_by_chips"), money(proposal.equity_shared)))
    if s.get("bounty_refunds"):
        out.append((_text("heads", n=f"{n:,}"), money(s["bounty_refunds"])))
    out += [("", ""), (_text("your_payout"), "")]

    if line.status != ACTIVE:
        out += [(_text("eliminated"), ""), (_text("total"), money(line.total))]
        return out
    if line.capped:
        label = _text("share_capped", cap=money(s["first_place_cap"]))
    else:
        label = _text(
            "share",
            chips=f"{line.chips:,}",
            total_chips=f"{proposal.equity_chips:,}",
            pool=money(proposal.equity_shared, True),
        )
    if equal_pool:
        out.append(
            (
                _text("equal_share", percent=percent, pool=money(s["equity_pool"]), n=f"{n:,}"),
                money(line.equal_share),
            )
        )
    out.append((label, money(line.chip_equity)))
    if in_money:
        out.append((_text("next_prize"), money(line.next_prize)))
    elif returned != "nothing":
        refund_key = (
            "buy_in_and_rebuys_refund"
            if returned == "buy_in_and_rebuys" and rebuys
            else "buy_in_refund"
        )
        out.append((_text(refund_key), money(line.buy_in_refund)))
    out.append((_text("fees_refund" if rebuys else "fee_refund"), money(line.fee_refund)))
    if line.bounty_refund:
        out.append((_text("bounty_refund"), money(line.bounty_refund)))
    out.append((_text("total"), money(line.total)))
    return out


def _equity_pool_label(percent: int) -> str:
    """What the amount remaining is for, as the policy divides it (`percent` of it in equal
    shares, the rest by chip equity): the seed's words when it all goes by chip equity, as
    rule_sentence says it on the approval page."""
    if percent == 0:
        return _text("equity_pool")
    if percent == 100:
        return _text("equity_pool_equal")
    return _text("equity_pool_split", percent=percent, chips_percent=100 - percent)


def _full_refund_reason(proposal: Proposal) -> str:
    policy = proposal.terms
    reason = proposal.full_refund_reason
    if reason == "site_wide_issue" or (reason is None and proposal.site_wide_issue):
        if policy.id == DEFAULT_POLICY_ID:
            return _text("why_site_wide_seed")
        return _text("why_site_wide", finding=policy.management_finding)
    if reason == "nothing_played" or (reason is None and proposal.elapsed_seconds <= 0):
        return _text("why_before_start")
    if reason == "before_first_elimination":
        return _text("why_no_elimination")
    secs = int(proposal.elapsed_seconds)
    window = policy.within_minutes if policy.within_minutes is not None else 20
    return _text("why_within", minutes=secs // 60, seconds=secs % 60, window=window)


def _refunded_text(proposal: Proposal) -> str:
    if proposal.rebuys is not None or proposal.refunds_bounties:
        return _text("refunded_formats")
    return _text("refunded_plain")


def explain(proposal: Proposal, entry_id: str) -> str:
    """The statement as text: label and amount separated by a tab, as the policy prints it."""
    return "\n".join(
        f"{label}\t{amount}" if amount else label
        for label, amount in statement_lines(proposal, entry_id)
    )
