import pytest

from tests.support.fake_cashier import FakeCashier


@pytest.fixture
def cashier():
    """A real HTTP cashier on 127.0.0.1 (tests/support/fake_cashier.py), stopped after the test."""
    with FakeCashier() as fake:
        yield fake
