"""Hypothesis state machine over approve / post a chunk / crash mid-chunk / redeliver: the ledger
never holds more than the approved total, and holds exactly it at the end."""

from unittest import mock

import pytest
from django.db import transaction
from django.db.models import Sum
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from refunds_admin.ledger import posting, writers
from refunds_admin.ledger.models import Credit, PostingJob
from tests.support.posting_support import expected_keys, make_approved_proposal

pytestmark = pytest.mark.django_db

cents = st.integers(min_value=0, max_value=50_000)
some_cents = st.integers(min_value=1, max_value=50_000)
# The lines a real proposal can have (tests.factories.lines_doc): (buy_in_refund, next_prize,
# chip_equity, fee_refund) per entry, under each of the three rules.
full_refund = st.lists(
    st.tuples(cents, cents).map(lambda paid: (paid[0], 0, 0, paid[1])), min_size=1, max_size=12
)
eliminated = st.just((0, 0, 0, 0))
not_in_the_money = st.lists(
    st.tuples(cents, some_cents, cents).map(lambda a: (a[0], 0, a[1], a[2])) | eliminated,
    min_size=2,
    max_size=12,
)


@st.composite
def in_the_money(draw):
    next_prize = draw(some_cents)
    active = st.tuples(some_cents, cents).map(lambda a: (0, next_prize, a[0], a[1]))
    return draw(st.lists(active | eliminated, min_size=2, max_size=12))


def two_active(lines):
    return sum(1 for line in lines if any(line)) >= 2


proposal_lines = full_refund | (not_in_the_money | in_the_money()).filter(two_active)


class Crash(Exception):
    """The worker dies after the chunk's INSERT, before its commit."""


class Posting(RuleBasedStateMachine):
    @initialize(amounts=proposal_lines)
    def approve(self, amounts):
        # Approval writes the outbox row; the task is not run here (the test's transaction
        # never commits), each rule below is one thing a worker may do.
        self.proposal = make_approved_proposal(amounts=amounts)

    def ledger(self):
        credits = Credit.objects.filter(proposal=self.proposal)
        return set(credits.values_list("key", flat=True)), credits.aggregate(s=Sum("amount_cents"))[
            "s"
        ] or 0

    def posted(self):
        job = PostingJob.objects.filter(proposal=self.proposal).first()
        return job is not None and job.state == "posted"

    @rule()
    def post_a_chunk(self):
        posting.post_proposal(self.proposal.pk, max_chunks=1)

    @precondition(lambda self: not self.posted())
    @rule()
    def crash_mid_chunk(self):
        real = writers.book_chunk

        def book_then_die(*args, **kwargs):
            real(*args, **kwargs)
            raise Crash("worker killed")

        with mock.patch.object(posting, "book_chunk", book_then_die), pytest.raises(Crash):
            posting.post_proposal(self.proposal.pk)

    @rule(after=st.integers(min_value=-1, max_value=12), size=st.integers(1, 5))
    def redeliver_from_a_stale_position(self, after, size):
        # A duplicate delivery whose worker read the job before the other one advanced it.
        with transaction.atomic():
            writers.book_chunk(self.proposal, after, size)

    @rule(chunks=st.integers(1, 3))
    def redeliver_the_task(self, chunks):
        posting.post_proposal(self.proposal.pk, max_chunks=chunks)

    @invariant()
    def never_more_than_approved(self):
        keys, total = self.ledger()
        assert keys <= expected_keys(self.proposal)
        assert total <= self.proposal.total_cents
        job = PostingJob.objects.filter(proposal=self.proposal).first()  # the first run makes it
        assert job is None or job.posted_cents <= total

    def teardown(self):
        if getattr(self, "proposal", None) is None:
            return
        assert posting.post_proposal(self.proposal.pk) == "posted"
        keys, total = self.ledger()
        assert keys == expected_keys(self.proposal)
        assert total == self.proposal.total_cents


def test_it_never_posts_more_than_approved_and_ends_exact(settings):
    settings.POSTING_CHUNK_SIZE = 3
    settings.POSTING_MAX_ATTEMPTS = 10_000  # crashes here are many and quick
    run_state_machine_as_test(
        Posting,
        # A fifth of the examples the Hypothesis profile asks for (tests/conftest.py): each one
        # imports, prepares and posts a proposal.
        settings=hsettings(
            max_examples=max(10, hsettings.default.max_examples // 5),
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
