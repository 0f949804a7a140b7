"""JCS bytes: the orjson fast path writes exactly what the rfc8785 package writes, or defers to it."""

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.format.canonical import jcs_bytes

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**60), max_value=2**60)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text())
values = st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                      | st.dictionaries(st.text(max_size=6), children, max_size=4), max_leaves=25)


def doubled(value):
    """value as an I-JSON reader holds it: every integer beyond ±(2^53-1) a double."""
    if type(value) is int and abs(value) > 2**53 - 1:
        return float(value)
    if isinstance(value, dict):
        return {key: doubled(child) for key, child in value.items()}
    if isinstance(value, list):
        return [doubled(child) for child in value]
    return value


@settings(max_examples=1000)
@given(values)
def test_jcs_bytes_are_the_rfc8785_bytes(value):
    """The rfc8785 package's bytes, for the value an I-JSON reader holds (it refuses integers beyond 2^53 itself)."""
    try:
        expected = rfc8785.dumps(doubled(value))
    except rfc8785.CanonicalizationError as exc:
        try:
            jcs_bytes(value)
        except type(exc):
            return
        raise AssertionError("the fast path accepted what rfc8785 refuses") from None
    assert jcs_bytes(value) == expected


def test_the_cases_where_orjson_and_jcs_part():
    for value in (1.0, -0.0, 1e-7, 1.5e20, 1e21, {"\ue000": 1, "\U0001f600": 2}, ["\u2028", "\x7f", "\x00"]):
        assert jcs_bytes(value) == rfc8785.dumps(value)
    with pytest.raises(rfc8785.CanonicalizationError):
        jcs_bytes({1: "a key that is not a string"})
