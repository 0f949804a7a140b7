"""Canonical bytes: key order never changes a hash; JCS is RFC 8785."""

import hashlib

import orjson
import pytest
import rfc8785

from openwop_cli.format.canonical import (
    NotJCS,
    _orjson_writes_jcs,
    canonical_bytes,
    content_hash,
    jcs_bytes,
    sha256_hex,
)


def test_key_order_does_not_change_canonical_bytes_or_hash():
    a = {"b": [1, {"y": 2, "x": 1}], "a": "é"}
    b = {"a": "é", "b": [1, {"x": 1, "y": 2}]}
    assert canonical_bytes(a) == canonical_bytes(b) == '{"a":"é","b":[1,{"x":1,"y":2}]}'.encode()
    assert content_hash(a) == content_hash(b) == sha256_hex(canonical_bytes(a))
    assert sha256_hex(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_jcs_serializes_numbers_per_rfc_8785():
    assert jcs_bytes({"t": 1.0, "s": 0.2, "a": [1e21]}) == b'{"a":[1e+21],"s":0.2,"t":1}'


def test_bytes_are_hashed_as_their_base64_stand_in():
    """canonical_bytes writes bytes as {"$bytes": base64} (what a capture holds), so a value with bytes has a hash."""
    assert canonical_bytes({"body": b"\x00\xffhi"}) == b'{"body":{"$bytes":"AP9oaQ=="}}'
    assert content_hash([bytearray(b"hi")]) == content_hash([{"$bytes": "aGk="}])
    with pytest.raises(TypeError) as refused:
        canonical_bytes({1, 2})
    assert str(refused.value.__cause__) == "set is not JSON", "what is not JSON is named"


def test_jcs_writes_a_tuple_as_an_array():
    assert jcs_bytes({"a": (1, "x", 0.5)}) == jcs_bytes({"a": [1, "x", 0.5]}) == b'{"a":[1,"x",0.5]}'
    assert jcs_bytes((2**53, 1)) == b"[9007199254740992,1]"


def test_an_integer_no_double_holds_is_named_in_the_error():
    with pytest.raises(NotJCS, match=r"the integer 12345678901234567890… is too large"):
        jcs_bytes({"n": int("1234567890" * 40)})


@pytest.mark.parametrize("value", ["text", "é ✓ \U0001f600", True, False, None, 0, 5, -5, 2**53 - 1, -(2**53 - 1),
                                   0.2, -0.5, 1e-4, 123.25, 1e15 - 0.5, {"a": [1, {"b": "c"}]}, []])
def test_values_orjson_writes_as_jcs_does_take_the_fast_path(value):
    """jcs_bytes writes with orjson (50x the rfc8785 package) wherever the two write the same bytes; a gate that sent
    these to the slow path would cost every cache key that time for nothing."""
    assert _orjson_writes_jcs(value) and orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == rfc8785.dumps(value)


@pytest.mark.parametrize("value", [1.0, -0.0, 1.5e20, 1e16, 2**53, -(2**53), [1, 1e300], {"a": 1e-7}, (1, 2)])
def test_values_orjson_writes_otherwise_take_the_rfc8785_path(value):
    assert not _orjson_writes_jcs(value)
