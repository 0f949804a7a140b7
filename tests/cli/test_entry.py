"""The entry point's fast path reads `wop capture`, `wop replay` and `wop diff` exactly as the Typer app does, or not
at all."""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click import Context
from typer.main import get_command

from openwop_cli.cli.app import app
from openwop_cli.cli.entry import fast_arguments
from tests.conftest import run_wop

WORDS = ["--", "-", "python", "agent.py", "last", "run-1", "x=1", "--json", "--proxy", "--name", "-n", "--out", "-o",
         "--redact", "none", "strict", "bogus", "--ambient", "on", "off", "--strict-transports", "--workflow",
         "--strict", "--lenient", "--from-seq", "7", "-3", "007", "--allow-tool", "--junit", "--jobs", "-j", "0",
         "--shard", "2/3", "--verbose", "-v", "--pdb", "--break-at", "--repeat", "--help", "-h", "--name=x", "-j4",
         "--unknown", "", "--ignore", "$.response.id", "--max-diffs", "1", "--align", "seq", "content",
         "--compare-run-metadata", "--ignore-run-metadata", "--detail"]


def typer_arguments(args: list[str]) -> dict[str, Any] | None:
    """What the Typer app passes on for this command line (in the fast path's terms); None: a usage error."""
    group = get_command(app)
    parent = Context(group, info_name="wop")
    command = group.get_command(parent, args[0])
    try:
        params = command.make_context(args[0], list(args[1:]), parent=parent).params
    except Exception:
        return None
    if args[0] == "capture":
        for option in ("redact", "ambient"):
            if params[option] is not None:
                params[option] = params[option].value
        params["ambient"] = None if params["ambient"] is None else params["ambient"] == "on"
    elif args[0] == "diff":
        params["align"] = params["align"].value
        params["ignore"] = list(params["ignore"]) if params["ignore"] else None
    else:
        params["allow_tool"] = list(params["allow_tool"]) or None
    return params


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["capture", "replay", "diff"]), st.lists(st.sampled_from(WORDS), max_size=8))
def test_a_command_line_the_fast_path_takes_is_read_as_typer_reads_it(command: str, words: list[str]) -> None:
    fast = fast_arguments([command, *words])
    if fast is not None:
        assert fast == (command, typer_arguments([command, *words]))


def test_everyday_command_lines_take_the_fast_path_and_the_rest_go_to_typer() -> None:
    assert fast_arguments(["capture", "--", "python", "agent.py"]) is not None
    assert fast_arguments(["capture", "-n", "a", "python", "agent.py", "--json"]) is not None
    assert fast_arguments(["replay", "--strict", "last", "--json", "--", "python", "agent.py"]) is not None
    assert fast_arguments(["diff", "a", "b", "--json", "--ignore", "$.x", "--max-diffs", "3"]) is not None
    for args in (["capture", "--help"], ["capture"], ["replay", "--", "python"], ["replay", "--repeat", "last"],
                 ["replay", "last", "--name=x"], ["replay", "last", "--from-seq", "-1"], ["show", "last"], [],
                 ["diff", "a"], ["diff", "a", "b", "c"], ["diff", "a", "b", "--max-diffs", "0"], ["diff", "--help"]):
        assert fast_arguments(args) is None, args


def test_a_capture_typer_parses_still_runs(tmp_path: Any) -> None:
    done = run_wop("capture", f"--out={tmp_path / 'c'}", "--", "python", "-c", "print(1)")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c" / "manifest.json").is_file()
    replayed = run_wop("replay", "--strict", str(tmp_path / "c"), "--out", str(tmp_path / "r"), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert (tmp_path / "r" / "manifest.json").is_file()
