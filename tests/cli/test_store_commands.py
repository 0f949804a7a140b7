"""The store and the commands over it, through the real `wop` entry point."""

import shutil
import time

import orjson
import pytest

from openwop_cli.format.redact import Redactor
from openwop_cli.format.sink import CaptureSink
from tests.conftest import FIXTURES, run_wop, sample_events


def store_capture(home, capture_id, name=None, created=None, events=None):
    path = home / "captures" / capture_id
    sink = CaptureSink(path, redactor=Redactor("default", ()))
    sink.start({"captureId": capture_id, "name": name, "createdAt": created,
                "program": {"argv": ["python", f"{capture_id}.py"]}})
    for event_type, data in events or sample_events(1):
        sink.append(event_type, data)
    sink.finalize("ok")
    return path


def test_help_lists_the_commands_and_version_prints_it():
    from openwop_cli import __version__

    helped = run_wop("--help")
    assert helped.returncode == 0
    for name in ("ls", "show", "verify", "cache-key", "rm", "gc"):
        assert f"  {name} " in helped.stdout
    version = run_wop("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"wop {__version__}"


def test_references_resolve_by_id_prefix_name_and_last(wop_home):
    store_capture(wop_home, "aaaa1111bbbb2222", name="checkout", created=1_000)
    store_capture(wop_home, "aaaa9999cccc3333", name="checkout", created=2_000)
    store_capture(wop_home, "dddd4444eeee5555", name="search", created=3_000)

    def shown_id(reference):
        done = run_wop("show", reference, "--json")
        assert done.returncode == 0, done.stderr
        return orjson.loads(done.stdout)["capture"]["captureId"]

    assert shown_id("aaaa1111bbbb2222") == "aaaa1111bbbb2222"
    assert shown_id("dddd") == "dddd4444eeee5555"
    assert shown_id("checkout") == "aaaa9999cccc3333"
    assert shown_id("last") == "dddd4444eeee5555"
    assert shown_id(str(wop_home / "captures" / "aaaa1111bbbb2222")) == "aaaa1111bbbb2222"


@pytest.mark.parametrize(
    "reference, code, needle",
    [
        ("aaaa", 2, "matches 2 captures"),
        ("zzzz", 2, "no capture matches 'zzzz'"),
        ("./no/such/dir", 2, "no such file or directory"),
    ],
)
def test_bad_references_are_one_line_and_exit_2(wop_home, reference, code, needle):
    store_capture(wop_home, "aaaa1111bbbb2222")
    store_capture(wop_home, "aaaa9999cccc3333")
    done = run_wop("show", reference)
    assert done.returncode == code
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_last_in_an_empty_store_and_a_directory_that_is_not_a_capture(wop_home, tmp_path):
    done = run_wop("show", "last")
    assert done.returncode == 2 and "needs at least one capture" in done.stderr
    (tmp_path / "plain").mkdir()
    done = run_wop("verify", str(tmp_path / "plain"))
    assert done.returncode == 2 and "is not a capture: it has no manifest.json" in done.stderr


def test_a_newer_major_format_is_refused_naming_the_version_and_the_upgrade(tmp_path):
    capture = tmp_path / "future"
    shutil.copytree(FIXTURES / "support-agent", capture)
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    manifest["version"] = 2
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    for command in ("show", "verify"):
        done = run_wop(command, str(capture))
        assert done.returncode == 3
        assert "format 2" in done.stderr and "pip install --upgrade openwop-cli" in done.stderr


def test_an_older_minor_style_version_is_accepted(tmp_path):
    capture = tmp_path / "older"
    shutil.copytree(FIXTURES / "support-agent", capture)
    manifest = orjson.loads((capture / "manifest.json").read_bytes())
    manifest["version"] = "1.0"
    (capture / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert run_wop("show", str(capture)).returncode == 0


def test_a_corrupt_manifest_is_exit_3(tmp_path):
    capture = tmp_path / "broken"
    shutil.copytree(FIXTURES / "support-agent", capture)
    (capture / "manifest.json").write_text("{oops")
    done = run_wop("show", str(capture))
    assert done.returncode == 3 and "not valid JSON" in done.stderr


def test_ls_lists_captures_as_a_table_and_as_json(wop_home):
    store_capture(wop_home, "aaaa1111bbbb2222", name="checkout", created=int(time.time() * 1000))
    table = run_wop("ls")
    assert table.returncode == 0
    assert "aaaa1111bbbb" in table.stdout and "checkout" in table.stdout and "python aaaa1111bbbb2222.py" in table.stdout
    rows = orjson.loads(run_wop("ls", "--json").stdout)
    assert rows[0]["captureId"] == "aaaa1111bbbb2222" and rows[0]["eventCount"] == 4 and rows[0]["status"] == "ok"


def test_show_filters_by_type_and_prints_one_event(tmp_path):
    fixture = str(FIXTURES / "support-agent")
    only_llm = run_wop("show", fixture, "--type", "llm")
    rows = [line for line in only_llm.stdout.splitlines()[2:] if line.strip()]
    assert [row.split()[0] for row in rows] == ["6–7"] and rows[0].split()[3] == "llm"
    assert "stop · 21→10 tokens" in rows[0] and "→" in rows[0]
    both = orjson.loads(run_wop("show", fixture, "--type", "tool_call,nondeterministic", "--json").stdout)
    assert [e["type"] for e in both["events"]] == ["nondeterministic", "tool_call", "nondeterministic", "tool_call"]
    one = run_wop("show", fixture, "--seq", "6")
    assert "llm_request" in one.stdout and "cacheKey" in one.stdout and "messages [3]" in one.stdout
    out_of_range = run_wop("show", fixture, "--seq", "99")
    assert out_of_range.returncode == 2 and "seq 0..11" in out_of_range.stderr
    bad_type = run_wop("show", fixture, "--type", "llama")
    assert bad_type.returncode == 2 and "unknown event type 'llama'" in bad_type.stderr


def test_rm_asks_without_yes_and_deletes_with_it(wop_home):
    path = store_capture(wop_home, "aaaa1111bbbb2222")
    refused = run_wop("rm", "aaaa")
    assert refused.returncode == 2 and "--yes" in refused.stderr and path.exists()
    done = run_wop("rm", "aaaa", "--yes")
    assert done.returncode == 0 and not path.exists()


def test_rm_keeps_files_that_are_not_part_of_the_capture(tmp_path, wop_home):
    capture = tmp_path / "mine"
    shutil.copytree(FIXTURES / "support-agent", capture)
    (capture / "notes.txt").write_text("keep me")
    done = run_wop("rm", str(capture), "--yes")
    assert done.returncode == 0 and "kept" in done.stdout
    assert [p.name for p in capture.iterdir()] == ["notes.txt"]


def test_rm_shows_a_stranger_files_name_escaped_never_as_terminal_controls(tmp_path, wop_home):
    """A received capture may hold a file named to set the window title or clear the screen: rm keeps it and names it
    with its controls as visible escapes (report.escape), on a terminal or a pipe alike."""
    capture = tmp_path / "received"
    shutil.copytree(FIXTURES / "support-agent", capture)
    (capture / "\x1b]0;pwned\x07\x1b[2J").write_text("keep me")
    done = run_wop("rm", str(capture), "--yes")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "kept what wop did not write: \\x1b]0;pwned\\x07\\x1b[2J" in done.stdout


def test_gc_deletes_only_old_captures_inside_the_store(wop_home, tmp_path):
    day = 86_400_000
    now = int(time.time() * 1000)
    old = store_capture(wop_home, "0000aaaa0000aaaa", created=now - 40 * day)
    new = store_capture(wop_home, "1111bbbb1111bbbb", created=now - 1 * day)
    outside = tmp_path / "outside"
    shutil.copytree(FIXTURES / "support-agent", outside)
    (wop_home / "captures" / "link").symlink_to(outside)
    dry = run_wop("gc", "--older-than", "30", "--dry-run", "--json")
    assert orjson.loads(dry.stdout)["captures"] == [str(old)] and old.exists()
    (old / "\x1b]0;pwned\x07").write_text("a stranger's file: kept, and named with its controls escaped")
    done = run_wop("gc", "--older-than", "30", "--yes")
    assert done.returncode == 0
    assert new.exists() and (outside / "events.jsonl").exists()
    assert [path.name for path in old.iterdir()] == ["\x1b]0;pwned\x07"]
    assert "\x1b" not in done.stdout and "kept what wop did not write: \\x1b]0;pwned\\x07" in done.stdout


def test_rm_refuses_a_web_app_that_merely_has_a_manifest_and_blobs(tmp_path):
    app = tmp_path / "webapp"
    (app / "blobs").mkdir(parents=True)
    (app / "manifest.json").write_text('{"name": "My App", "start_url": "/", "icons": []}')
    (app / "blobs" / "logo.png").write_bytes(b"\x89PNG")
    (app / "index.html").write_text("<html></html>")
    done = run_wop("rm", str(app), "--yes")
    assert done.returncode == 2 and "not deleting" in done.stderr and "nothing was deleted" in done.stderr
    assert sorted(p.name for p in app.rglob("*")) == ["blobs", "index.html", "logo.png", "manifest.json"]


def test_rm_refuses_a_wop_manifest_whose_events_belong_to_another_capture(tmp_path):
    capture = shutil.copytree(FIXTURES / "support-agent", tmp_path / "c")
    other = shutil.copytree(FIXTURES / "support-agent-changed", tmp_path / "other")
    shutil.copy(other / "events.jsonl", capture / "events.jsonl")
    done = run_wop("rm", str(capture), "--yes")
    assert done.returncode == 2 and "belongs to another capture" in done.stderr
    assert (capture / "manifest.json").exists() and (capture / "events.jsonl").exists()


def test_rm_of_a_link_in_the_store_removes_the_link_and_keeps_the_capture_it_points_to(wop_home, tmp_path):
    outside = shutil.copytree(FIXTURES / "support-agent", tmp_path / "outside")
    (wop_home / "captures").mkdir(parents=True)
    link = wop_home / "captures" / "link"
    link.symlink_to(outside)
    done = run_wop("rm", str(link), "--yes")
    assert done.returncode == 0 and "removed the link" in done.stdout
    assert not link.is_symlink() and not link.exists()
    assert sorted(p.name for p in outside.iterdir()) == sorted(p.name for p in (FIXTURES / "support-agent").iterdir())


def test_rm_never_follows_links_inside_a_capture_and_lists_what_it_kept(tmp_path):
    capture = shutil.copytree(FIXTURES / "support-agent", tmp_path / "c")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("keep")
    blob_dir = next(path for path in (capture / "blobs" / "sha256").iterdir())
    (blob_dir / ("f" * 64)).symlink_to(precious / "data.txt")
    (capture / "events.crc32").unlink()
    (capture / "events.crc32").symlink_to(precious / "data.txt")
    done = run_wop("rm", str(capture), "--yes")
    assert done.returncode == 0 and "kept what wop did not write" in done.stdout
    assert "events.crc32" in done.stdout and "f" * 64 in done.stdout
    assert (precious / "data.txt").read_text() == "keep"
    assert not (capture / "manifest.json").exists() and not (capture / "events.jsonl").exists()


def test_gc_keeps_store_directories_that_are_not_wop_captures_and_says_so(wop_home):
    day = 86_400_000
    old = store_capture(wop_home, "0000aaaa0000aaaa", created=int(time.time() * 1000) - 40 * day)
    (old / "events.jsonl").write_bytes(b'{"captureId":"someone-else"}\n')
    done = run_wop("gc", "--older-than", "30", "--yes", "--json")
    assert done.returncode == 0
    report = orjson.loads(done.stdout)
    assert report["captures"] == [] and "belongs to another capture" in report["skipped"][str(old)]
    assert (old / "manifest.json").exists()
