"""The HTTP/1.1 stream reader the socket recorder parses raw connections with: whatever way the bytes are cut."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.runtime.adapters import http11
from openwop_cli.runtime.adapters.http11 import MAX_HEAD, MessageReader, NotHTTP, looks_like_request

TOKENS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).filter(
    lambda name: name.lower() not in ("content-length", "transfer-encoding"))
VALUES = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=20)
HEADERS = st.lists(st.tuples(TOKENS, VALUES), max_size=6)
BODIES = st.binary(max_size=300)


@st.composite
def requests(draw):
    """(bytes on the wire, the method, target, headers and body the reader should give back)."""
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]))
    target = "/" + draw(st.text(alphabet="abcdefghij/?=&.", max_size=20))
    headers, body = draw(HEADERS), draw(BODIES)
    framing = draw(st.sampled_from(["length", "chunked"] + (["none"] if not body else [])))
    return (_wire(f"{method} {target} HTTP/1.1", headers, body, framing, draw), (method, target, "HTTP/1.1"),
            headers + _framing_headers(body, framing), body)


@st.composite
def responses(draw):
    """(bytes, the method of its request, the message's start line, headers and body)."""
    method = draw(st.sampled_from(["GET", "POST", "HEAD"]))
    status = draw(st.sampled_from([200, 201, 204, 304, 400, 500]))
    headers = draw(HEADERS)
    bodiless = method == "HEAD" or status in (204, 304)
    body = b"" if bodiless else draw(BODIES)
    framing = "none" if bodiless else draw(st.sampled_from(["length", "chunked"]))
    interim = draw(st.booleans()) and method == "POST"
    wire = (b"HTTP/1.1 100 Continue\r\n\r\n" if interim else b"") + _wire(f"HTTP/1.1 {status} Reason Here", headers,
                                                                        body, framing, draw)
    return wire, method, ("HTTP/1.1", str(status), "Reason Here"), headers + _framing_headers(body, framing), body


def _wire(start: str, headers: list, body: bytes, framing: str, draw) -> bytes:
    head = start + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers + _framing_headers(body, framing))
    if framing != "chunked":
        return (head + "\r\n").encode() + body
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(body) - 1, 1)), max_size=4)))) if len(body) > 1 else []
    pieces = [body[start:end] for start, end in zip([0, *cuts], [*cuts, len(body)]) if body[start:end]]
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece) for piece in pieces)
    return (head + "\r\n").encode() + chunks + b"0\r\nTrailer-Name: x\r\n\r\n"


def _framing_headers(body: bytes, framing: str) -> list:
    if framing == "length":
        return [("Content-Length", str(len(body)))]
    return [("Transfer-Encoding", "chunked")] if framing == "chunked" else []


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({point % (len(data) + 1) for point in cuts})
    return [data[start:end] for start, end in zip([0, *points], [*points, len(data)])]


@settings(max_examples=200, deadline=None)
@given(st.lists(requests(), min_size=1, max_size=4), st.lists(st.integers(0, 10_000), max_size=12))
def test_requests_on_one_connection_come_back_whole_and_in_order_however_the_bytes_are_cut(sent, cuts):
    reader = MessageReader(requests=True)
    got = []
    for piece in _cut(b"".join(wire for wire, *_ in sent), cuts):
        got.extend(reader.feed(piece))
    assert [(message.start, message.headers, message.body) for message in got] == [
        (start, headers, body) for _, start, headers, body in sent]
    assert reader.idle and reader.end() is None


@settings(max_examples=200, deadline=None)
@given(st.lists(responses(), min_size=1, max_size=4), st.lists(st.integers(0, 10_000), max_size=12))
def test_answers_follow_their_requests_methods_and_skip_interim_answers(answered, cuts):
    reader = MessageReader(requests=False)
    for _, method, *_ in answered:
        reader.expect(method)
    got = []
    for piece in _cut(b"".join(wire for wire, *_ in answered), cuts):
        got.extend(reader.feed(piece))
    assert [(message.start, message.headers, message.body) for message in got] == [
        (start, headers, body) for _, _, start, headers, body in answered]


@settings(max_examples=100, deadline=None)
@given(BODIES, st.integers(0, 400))
def test_an_answer_without_length_ends_with_the_connection_and_one_cut_short_says_so(body, cut):
    reader = MessageReader(requests=False)
    reader.expect("GET")
    assert reader.feed(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body) == []
    ended = reader.end()
    assert (ended.body, ended.complete) == (body, True)
    short = MessageReader(requests=False)
    short.expect("GET")
    wire = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body) + 1, body)
    assert short.feed(wire[:len(wire) - cut % (len(body) + 1)]) == []
    assert short.end().complete is False


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.booleans())
def test_any_bytes_give_messages_or_not_http_and_nothing_else(data, as_requests):
    reader = MessageReader(requests=as_requests)
    reader.expect("GET")
    try:
        reader.feed(data)
        reader.end()
    except NotHTTP:
        pass


def test_bounds_are_kept_whatever_the_peer_sends(monkeypatch):
    reader = MessageReader(requests=True)
    with pytest.raises(NotHTTP, match="head longer"):
        for _ in range(MAX_HEAD // 1000 + 2):
            reader.feed(b"GET / HTTP/1.1\r\nX: " + b"a" * 1000)
    monkeypatch.setattr(http11, "MAX_BODY", 10)
    with pytest.raises(NotHTTP, match="body of more than"):
        MessageReader(requests=True).feed(b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n")
    chunked = MessageReader(requests=True)
    with pytest.raises(NotHTTP, match="body of more than"):
        chunked.feed(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n")
    with pytest.raises(NotHTTP, match="chunk line longer"):
        MessageReader(requests=True).feed(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 5000)
    with pytest.raises(NotHTTP, match="one number"):
        MessageReader(requests=True).feed(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")


def test_a_101_answer_hands_the_connection_to_another_protocol():
    reader = MessageReader(requests=False)
    reader.expect("GET")
    (switched,) = reader.feed(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi")
    assert switched.start[1] == "101" and reader.upgraded and reader.feed(b"\x81\x02hi") == []


@pytest.mark.parametrize("first_bytes, verdict", [
    (b"", None), (b"PO", None), (b"POST /v1/chat", None), (b"POST /v1/chat HTTP/1.", None),
    (b"POST /v1/chat HTTP/1.1\r\n", True), (b"GET / HTTP/1.0\n", True),
    (b"\x16\x03\x01\x02\x00", False), (b"*1\r\n$4\r\nPING\r\n", False), (b"get / HTTP/1.1\r\n", False),
    (b"GET / HTTP/2\r\n", False), (b"PRI * HTTP/2.0\r\n", False), (b"HELLO world\n", False),
])
def test_the_first_bytes_tell_http_from_any_other_protocol(first_bytes, verdict):
    assert looks_like_request(first_bytes) is verdict


@settings(max_examples=200, deadline=None)
@given(requests(), st.integers(0, 10_000))
def test_every_beginning_of_a_request_may_be_one_and_the_whole_line_is(request, cut):
    wire = request[0]
    line = wire[:wire.index(b"\n") + 1]
    assert looks_like_request(line[:cut % len(line)]) is None and looks_like_request(line) is True
