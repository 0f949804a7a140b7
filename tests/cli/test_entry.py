"""The entry point's fast path reads every command exactly as the Typer app does, or not at all."""

from enum import Enum
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click import Context
from typer.main import get_command

from openwop_cli.cli.app import app
from openwop_cli.cli.entry import fast_arguments
from openwop_cli.cli.fast_options import COMMANDS
from tests.conftest import run_wop

WORDS = ["--", "-", "python", "agent.py", "last", "run-1", "x=1", "--json", "--proxy", "--name", "-n", "--out", "-o",
         "--redact", "none", "strict", "bogus", "--ambient", "on", "off", "--strict-transports", "--workflow",
         "--strict", "--lenient", "--from-seq", "7", "-3", "007", "+4", "--allow-tool", "--junit", "--jobs", "-j", "0",
         "--shard", "2/3", "--verbose", "-v", "--pdb", "--break-at", "--repeat", "--help", "-h", "--name=x", "-j4",
         "--unknown", "", "--ignore", "$.response.id", "--max-diffs", "1", "--align", "seq", "content",
         "--compare-run-metadata", "--ignore-run-metadata", "--detail", "--output", "--no-output", "--exact-output",
         "--trust", "--debug", "-vj", "--type", "-t", "llm", "--node", "--grep", "--from", "--to", "--seq", "--state",
         "--sites", "--no-pager", "--jsonl", "--at", "--channel", "-c", "--declarations", "--against", "--yes", "-y",
         "--older-than", "30", "1.5", "1e3", "inf", "--dry-run", "--edit", "--offline", "--set", "--endpoint",
         "--project", "--file", "--phoenix", "--trace-id", "otel", "vcr", "export"]
VALUES = ["x", "some/dir", "on", "off", "none", "default", "strict", "seq", "content", "0", "1", "2", "007", "+4",
          "-1", "1.5", "1.", ".5", "1e3", "1_0", "inf", "nan", " 2", "２", "9" * 5000, "", "--json"]  # a value for every option's
# type, and values Typer refuses or reads otherwise
EVERYDAY = {"capture": ["--", "python", "agent.py"], "replay": ["last"], "fork": ["last"], "diff": ["run-a", "run-b"],
            "state": ["last"], "report": ["last"], "ls": [], "show": ["last"], "verify": ["last"],
            "cache-key": ["request.json"], "rm": ["last"], "gc": ["--older-than", "30"], "export otel": ["last"],
            "import vcr": ["cassette.yaml"], "import otel": ["traces.jsonl"]}


@cache
def typer_group() -> Any:
    """The Typer app as a click group, built once (10 ms a build, and the tests below parse thousands of lines)."""
    return get_command(app)


def typer_command(name: str) -> tuple[Any, Any]:
    """The click command of `name` ("group command" for a sub-app's) and its parent's context."""
    command = typer_group()
    parent = None
    for word in name.split():
        parent = Context(command, info_name=word if parent else "wop", parent=parent)
        command = command.get_command(parent, word)
    return command, parent


def typer_arguments(name: str, words: list[str]) -> dict[str, Any] | None:
    """What the Typer app passes on for `wop NAME WORDS…`, as its action receives it (an enum as its value, an
    option given no value None); None: a usage error."""
    command, parent = typer_command(name)
    try:
        params = command.make_context(name.split()[-1], list(words), parent=parent).params
    except Exception:
        return None
    return {name: plain(value) for name, value in params.items()}


def plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value) or None
    return value


def test_every_command_has_its_everyday_shape_here() -> None:
    assert set(EVERYDAY) == set(COMMANDS)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(sorted(COMMANDS)), st.lists(st.sampled_from(WORDS), max_size=8))
def test_a_command_line_the_fast_path_takes_is_read_as_typer_reads_it(command: str, words: list[str]) -> None:
    fast = fast_arguments([*command.split(), *words])
    if fast is not None:
        assert fast == (command, typer_arguments(command, words))


@pytest.mark.parametrize("name", sorted(EVERYDAY))
def test_every_option_is_read_as_typer_reads_it_or_left_to_typer(name: str) -> None:
    """Each option of the Typer command, alone, repeated and before or after the positional words: the fast path
    reads it as Typer does or declines; and it reads every option whose table entry is not `decline`."""
    command, _ = typer_command(name)
    words = [word for param in command.params if param.param_type_name == "option"
             for word in (*param.opts, *param.secondary_opts)]
    assert set(words) == set(COMMANDS[name]["options"]), "run `python scripts/make_fast_options.py`"
    for word in words:
        taken = 0
        for value in (None, *VALUES):
            option = [word] if value is None else [word, value]
            first, rest = EVERYDAY[name][:1], EVERYDAY[name][1:]
            for line in ([*option, *first, *rest], [*option, *option, *first, *rest],
                         [*first, *option, *rest]):  # capture: after `--`, the option is the program's word
                fast = fast_arguments([*name.split(), *line])
                if fast is not None:
                    assert fast == (name, typer_arguments(name, line)), line
                    taken += line[0] == word
        assert (taken > 0) == (COMMANDS[name]["options"][word][1] != "decline"), (name, word)


def test_everyday_command_lines_take_the_fast_path_and_the_rest_go_to_typer() -> None:
    assert fast_arguments(["capture", "--", "python", "agent.py"]) is not None
    assert fast_arguments(["capture", "-n", "a", "python", "agent.py", "--json"]) is not None
    assert fast_arguments(["replay", "--strict", "last", "--json", "--", "python", "agent.py"]) is not None
    assert fast_arguments(["diff", "a", "b", "--json", "--ignore", "$.x", "--max-diffs", "3"]) is not None
    assert fast_arguments(["show", "last", "--type", "llm", "--seq", "3"]) is not None
    assert fast_arguments(["export", "otel", "last", "--file", "run.jsonl"]) == ("export otel", typer_arguments(
        "export otel", ["last", "--file", "run.jsonl"]))
    assert fast_arguments(["gc", "--older-than", "7", "--dry-run"]) is not None
    for args in (["capture"], ["replay", "--", "python"], ["ls"], ["import", "otel", "--phoenix", "http://x"]):
        # Typer passes them on too (the action says what is missing)
        name = " ".join(args[:2]) if args[0] == "import" else args[0]
        assert fast_arguments(args) == (name, typer_arguments(name, args[len(name.split()):]))
    for args in (["capture", "--help"], ["replay", "--repeat", "last"], ["replay"], ["replay", "last", "--pdb", "-vj"],
                 ["replay", "last", "--name=x"], ["replay", "last", "--from-seq", "-1"], ["show"], [],
                 ["diff", "a"], ["diff", "a", "b", "c"], ["diff", "a", "b", "--max-diffs", "0"], ["diff", "--help"],
                 ["gc"], ["gc", "--dry-run"], ["gc", "--older-than", "1e3"], ["export"], ["export", "--help"],
                 ["export", "otel", "--help"], ["import", "csv", "x"], ["fork", "last", "--edit", "3", "$.x=1"],
                 ["ls", "extra"], ["--debug", "ls"]):
        assert fast_arguments(args) is None, args


def test_a_capture_typer_parses_still_runs(tmp_path: Any) -> None:
    done = run_wop("capture", f"--out={tmp_path / 'c'}", "--", "python", "-c", "print(1)")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c" / "manifest.json").is_file()
    replayed = run_wop("replay", "--strict", str(tmp_path / "c"), "--out", str(tmp_path / "r"), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert (tmp_path / "r" / "manifest.json").is_file()
