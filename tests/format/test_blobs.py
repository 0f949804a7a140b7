"""Blob references are validated before any path is built from them."""

import orjson
import pytest

from openwop_cli.errors import UnsafeBlobReference
from openwop_cli.format.blobs import BlobStore
from tests.conftest import run_wop, write_capture

BAD_REFS = ["sha256:../../etc/passwd", "sha256:XYZ", "sha256:" + "A" * 64, "md5:" + "a" * 32, "sha256:" + "a" * 63 + "/"]


@pytest.mark.parametrize("ref", BAD_REFS)
def test_unsafe_reference_never_becomes_a_path(tmp_path, ref):
    with pytest.raises(UnsafeBlobReference):
        BlobStore(tmp_path).path_for(ref)


@pytest.mark.parametrize("ref", BAD_REFS[:2])
def test_verify_and_show_reject_a_traversal_reference_with_exit_3(tmp_path, ref):
    capture = write_capture(tmp_path / "c", [("tool_result", {"callId": "1", "ok": True, "result": "small"})])
    events = capture / "events.jsonl"
    event = orjson.loads(events.read_bytes())
    event["data"]["result"] = {"$blob": ref}
    events.write_bytes(orjson.dumps(event) + b"\n")
    done = run_wop("verify", str(capture))
    assert done.returncode == 3
    assert "not 'sha256:' followed by 64 lowercase hex" in done.stdout
    shown = run_wop("show", str(capture), "--seq", "0")
    assert shown.returncode == 0 and "not 'sha256:' followed by 64 lowercase hex" in shown.stderr


def test_a_blob_that_was_changed_is_reported(tmp_path):
    capture = write_capture(tmp_path / "c", [("tool_result", {"callId": "1", "ok": True, "result": "z" * 70_000})])
    [blob] = [path for path in (capture / "blobs").rglob("*") if path.is_file()]
    blob.write_text("tampered")
    done = run_wop("verify", str(capture))
    assert done.returncode == 3 and "does not match its sha256 name" in done.stdout
