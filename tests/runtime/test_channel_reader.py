"""The collector's reader: lines and frames of raw pieces, whole and in order however the bytes arrive."""

from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.wire.channel import FRAME_MARK, take_messages

_LINE = st.binary(max_size=40).map(lambda raw: raw.replace(b"\x00", b"").replace(b"\n", b"").replace(b"\r", b""))
_MESSAGE = st.one_of(st.tuples(st.just(False), _LINE), st.tuples(st.just(True), st.binary(max_size=300)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGE, max_size=12), st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=40))
def test_lines_and_frames_come_out_whole_and_in_order_however_the_bytes_arrive(messages, cuts):
    """The collector's reader (take_messages) against any mix of lines and frames, read in pieces of any size."""
    wire = b"".join(FRAME_MARK + len(body).to_bytes(4, "big") + body if is_frame else body + b"\n"
                    for is_frame, body in messages)
    pending, taken, awaiting, start = bytearray(), [], 0, 0
    while start < len(wire):
        size = cuts[len(taken) % len(cuts)] if start else cuts[0]
        pending += wire[start:start + size]
        start += size
        if len(pending) >= awaiting:
            found, awaiting, torn = take_messages(pending)
            assert torn == 0
            taken.extend(found)
    assert taken == messages and not pending


def test_a_line_cut_by_a_frame_is_counted_and_what_follows_is_read():
    pending = bytearray(b"whole\nhalf a li" + FRAME_MARK + (3).to_bytes(4, "big") + b"abc" + b"next\n")
    assert take_messages(pending) == ([(False, b"whole"), (True, b"abc"), (False, b"next")], 0, 1)
    incomplete = bytearray(FRAME_MARK + (10).to_bytes(4, "big") + b"abc")
    assert take_messages(incomplete) == ([], 15, 0) and len(incomplete) == 8


def test_a_frames_pickles_come_back_as_their_entries_and_a_class_is_refused():
    """frame_entries reads every pickle of a frame (each with its own memo) into its entries; a pickle naming a class
    is refused (the restructure lost the module's `_unpickler = None`: every frame raised NameError, and the
    collector counted each raw exchange as a bad message)."""
    import pickle
    from collections import OrderedDict

    import pytest

    from openwop_cli.wire.channel import frame_entries

    first = [("http", 1, None, (b"GET / HTTP/1.1\r\n",), b"")]
    second = [("http", 2, b"{}", (b"HTTP/1.1 200 OK\r\n", b"\r\n"), b"hello")]
    assert list(frame_entries(pickle.dumps(first, 5) + pickle.dumps(second, 5))) == first + second
    with pytest.raises(pickle.UnpicklingError, match="collections.OrderedDict"):
        list(frame_entries(pickle.dumps([OrderedDict()], 5)))
