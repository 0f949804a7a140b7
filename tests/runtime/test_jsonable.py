"""How a program's values are written into a capture (wire.jsonable): never failing the call, read back exact."""

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.wire.jsonable import BIG_INT_TAG, dumps, revive, revive_big_ints, revive_bytes

_KEYS = st.text(max_size=6)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63, max_value=2**64 + 2),
                     st.integers(min_value=-(2**64), max_value=-(2**63) + 2), st.text(max_size=8),
                     st.binary(max_size=8), st.floats(allow_nan=False, allow_infinity=False))
_VALUES = st.recursive(_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=4), st.tuples(children, children), st.dictionaries(_KEYS, children, max_size=4)),
    max_leaves=20)


def _as_json(value):
    """value as a capture holds it, Python side: tuples as lists."""
    if isinstance(value, (list, tuple)):
        return [_as_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_any_value_with_integers_of_any_size_is_written_and_read_back_exactly(value):
    """An integer beyond 64 bits (orjson's limit) is written tagged, never raising, and comes back the same int."""
    written = dumps(value)
    assert revive_big_ints(revive_bytes(orjson.loads(written))) == _as_json(value)


def test_an_integer_beyond_64_bits_is_tagged_only_where_orjson_cannot_write_it():
    assert orjson.loads(dumps({"a": 2**64 - 1, "b": -(2**63), "c": 2**64, "d": -(2**63) - 1})) == {
        "a": 2**64 - 1, "b": -(2**63), "c": {BIG_INT_TAG: str(2**64)}, "d": {BIG_INT_TAG: str(-(2**63) - 1)}}
    assert revive_big_ints({BIG_INT_TAG: "5"}) == {BIG_INT_TAG: "5"}  # a program's own dict: no int tag writes


def test_an_integer_past_pythons_decimal_digit_limit_is_written_in_hex_and_revived():
    huge = 7**20000  # about 17,000 digits: str() refuses it (sys.set_int_max_str_digits)
    written = orjson.loads(dumps([huge]))
    assert written[0][BIG_INT_TAG].startswith("0x") and revive(written, None) == [huge]


def test_a_big_integer_inside_what_json_default_stands_in_for_is_tagged_too():
    from dataclasses import dataclass

    @dataclass
    class Order:
        total: int
        lines: set

    value = {"order": Order(2**70, {2**65}), "deep": [[[2**80]]]}
    assert revive_big_ints(orjson.loads(dumps(value))) == {"order": {"total": 2**70, "lines": [2**65]},
                                                          "deep": [[[2**80]]]}
