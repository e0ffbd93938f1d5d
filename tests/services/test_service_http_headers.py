"""ledger/http.parse_headers reads an answer's header block as http.client.parse_headers does
(the same HTTPMessage, the same bytes consumed, the same limits), faster on the plain blocks the
cashier and the webhook send: a property test over generated blocks, plain and not."""

import http.client
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refunds_admin.ledger.http import parse_headers

NAME_CHARS = [chr(c) for c in range(0x21, 0x7F) if c != 0x3A]
LATIN1_VALUE = st.text(
    st.characters(min_codepoint=0, max_codepoint=255, blacklist_characters="\r\n"), max_size=30
)
ENDING = st.sampled_from(["\r\n", "\n"])

BLANKS = st.sampled_from(["", " ", "  ", "\t", " \t"])
plain_line = st.builds(
    lambda name, blanks, value, trailing, end: f"{name}:{blanks}{value}{trailing}{end}",
    st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=12),
    BLANKS,
    LATIN1_VALUE,
    BLANKS,
    ENDING,
)
# Lines the e-mail parser reads its own way: folded, nameless, a blank in the name, a stray
# carriage return, an mbox "From " line, a line with no colon.
odd_line = st.one_of(
    st.builds(lambda v, e: f" {v}{e}", LATIN1_VALUE, ENDING),
    st.builds(lambda v, e: f"\t{v}{e}", LATIN1_VALUE, ENDING),
    st.builds(lambda v, e: f":{v}{e}", LATIN1_VALUE, ENDING),
    st.builds(lambda v, e: f"Bad Name: {v}{e}", LATIN1_VALUE, ENDING),
    st.builds(lambda v, e: f"X-A: {v}\r{v}{e}", LATIN1_VALUE, ENDING),
    st.builds(lambda v, e: f"From {v}{e}", LATIN1_VALUE, ENDING),
    st.builds(lambda v, e: f"no colon {v}{e}", LATIN1_VALUE, ENDING),
)


def _read(parse, data):
    fp = io.BytesIO(data)
    message = parse(fp)
    return message.items(), message.get_payload(), len(message.defects), fp.read()


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.one_of(plain_line, plain_line, plain_line, odd_line), max_size=12),
    terminator=st.sampled_from(["\r\n", "\n", ""]),
    rest=st.binary(max_size=20),
)
def test_the_header_block_reads_as_http_client_reads_it(lines, terminator, rest):
    data = "".join(lines).encode("latin-1") + terminator.encode()
    if terminator:  # the body that follows stays unread
        data += rest
    assert _read(parse_headers, data) == _read(http.client.parse_headers, data)


def test_a_plain_block_keeps_order_case_and_repeated_names():
    data = b"Content-Type: application/json\r\nSet-Cookie: a=1\r\nset-cookie: b=2 \r\n\r\n{}"
    items, payload, defects, rest = _read(parse_headers, data)
    assert items == [
        ("Content-Type", "application/json"),
        ("Set-Cookie", "a=1"),
        ("set-cookie", "b=2 "),
    ]
    assert rest == b"{}"


@pytest.mark.parametrize(
    "data, error",
    [
        (b"X-Long: " + b"a" * 65536 + b"\r\n\r\n", http.client.LineTooLong),
        (b"X-A: 1\r\n" * 100 + b"\r\n", http.client.HTTPException),
    ],
    ids=["a line over 64 KiB", "100 header lines"],
)
def test_the_limits_are_http_clients(data, error):
    with pytest.raises(error) as ours:
        parse_headers(io.BytesIO(data))
    with pytest.raises(error) as theirs:
        http.client.parse_headers(io.BytesIO(data))
    assert str(ours.value) == str(theirs.value)


def test_ninety_nine_header_lines_are_read():
    data = b"X-A: 1\r\n" * 99 + b"\r\n"
    assert len(parse_headers(io.BytesIO(data)).items()) == 99
