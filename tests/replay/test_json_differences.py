"""Where two JSON values differ: the paths a divergence and `wop diff` name (replay.divergence.differences)."""

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.diff import changed_paths
from openwop_cli.replay.divergence import differences, first_difference

SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.sampled_from("ab")
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["a", "b", "c", "my key"]), inner, max_size=4), max_leaves=25)


def value_at(value, parts):
    for part in parts:
        value = value[part]
    return value


@settings(max_examples=400, deadline=None)
@given(JSON, JSON)
def test_values_differ_exactly_where_their_json_differs(left, right):
    found = list(differences(left, right))
    same_json = orjson.dumps(left, option=orjson.OPT_SORT_KEYS) == orjson.dumps(right, option=orjson.OPT_SORT_KEYS)
    assert (found == []) == same_json
    for parts, left_value, right_value in found:
        for side, value in ((left, left_value), (right, right_value)):
            try:
                assert value_at(side, parts) == value
            except (KeyError, IndexError, TypeError):
                assert value is None  # the path is past this side's end: it has no value there


def test_the_first_difference_is_the_first_path_in_key_and_index_order():
    expected = {"z": 1, "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "a"}]}
    observed = {"z": 2, "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "b"}]}
    assert first_difference(expected, observed) == ("$.messages[1].content", "a", "b")
    assert first_difference(expected, expected) == (None, expected, expected)


def test_numbers_of_another_json_type_and_missing_keys_are_named():
    """A replay compares requests as sent (1 and 1.0 are two bodies); `wop diff` compares JCS forms (one number)."""
    assert [parts for parts, _, _ in differences({"n": 1, "t": True}, {"n": 1.0, "t": 1})] == [("n",), ("t",)]
    assert changed_paths({"n": 1, "t": True}, {"n": 1.0, "t": 1}) == ["$.t"]
    assert changed_paths({"a": [1, 2]}, {"a": [1], "my key": None}) == ["$.a[1]", "$['my key']"]
    assert first_difference({"a": [1, 2]}, {"a": [1]}) == ("$.a[1]", 2, None)
