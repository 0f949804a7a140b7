"""Canonical bytes: key order never changes a hash; JCS is RFC 8785."""

import hashlib

from openwop_cli.format.canonical import canonical_bytes, content_hash, jcs_bytes, sha256_hex


def test_key_order_does_not_change_canonical_bytes_or_hash():
    a = {"b": [1, {"y": 2, "x": 1}], "a": "é"}
    b = {"a": "é", "b": [1, {"x": 1, "y": 2}]}
    assert canonical_bytes(a) == canonical_bytes(b) == '{"a":"é","b":[1,{"x":1,"y":2}]}'.encode()
    assert content_hash(a) == content_hash(b) == sha256_hex(canonical_bytes(a))
    assert sha256_hex(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_jcs_serializes_numbers_per_rfc_8785():
    assert jcs_bytes({"t": 1.0, "s": 0.2, "a": [1e21]}) == b'{"a":[1e+21],"s":0.2,"t":1}'
