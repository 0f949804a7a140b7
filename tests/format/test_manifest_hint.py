"""manifest_hint: the manifest as Python's json reads it, which `wop replay` starts its program from before orjson is
loaded. It never raises on a stranger's file, never follows a link, and says what the checked reader says of every
manifest wop writes."""

import json
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.format.manifest import manifest_hint, read_manifest
from tests.conftest import sample_events, write_capture

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(content=st.one_of(st.binary(max_size=300), JSON_VALUES.map(lambda value: json.dumps(value).encode()),
                         st.integers(1, 5000).map(lambda depth: b"[" * depth + b"]" * depth),
                         st.sampled_from([b'{"a": NaN}', b'{"a": Infinity}', '{"a": 1}'.encode("utf-16"),
                                          b'{"a": 1, "a": 2}', b"\xef\xbb\xbf{}", b'{"a": "\\ud800"}'])))
def test_any_bytes_give_an_object_or_none_and_never_an_error(content):
    with tempfile.TemporaryDirectory() as temp:
        (Path(temp) / "manifest.json").write_bytes(content)
        hint = manifest_hint(Path(temp))
    assert hint is None or type(hint) is dict


@settings(max_examples=60, deadline=None)
@given(argv=st.lists(st.text(min_size=1), min_size=1, max_size=4), name=st.text(), ambient=st.booleans())
def test_every_manifest_wop_writes_is_hinted_as_the_checked_reader_reads_it(argv, name, ambient):
    with tempfile.TemporaryDirectory() as temp:
        capture = write_capture(Path(temp) / "c", sample_events(2), program={"argv": argv, "cwd": temp}, name=name,
                                ambient=ambient)
        assert manifest_hint(capture) == read_manifest(capture)


def test_a_manifest_that_is_a_link_or_a_fifo_or_missing_is_no_hint(tmp_path):
    real = write_capture(tmp_path / "real", sample_events(2), program={"argv": ["python", "-c", "pass"]})
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "manifest.json").symlink_to(real / "manifest.json")
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "manifest.json")
    assert manifest_hint(real) is not None
    assert manifest_hint(linked) is None and manifest_hint(fifo) is None and manifest_hint(tmp_path) is None
