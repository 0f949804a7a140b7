"""The entry point's fast path reads `wop capture`, `wop replay` and `wop diff` exactly as the Typer app does, or not
at all."""

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
         "--trust", "--debug", "-vj"]
VALUES = ["x", "some/dir", "on", "off", "none", "default", "strict", "seq", "content", "0", "1", "2", "007", "+4",
          "-1", "1.5", "", "--json"]  # a value for every option's type, and values Typer refuses or reads otherwise
EVERYDAY = {"capture": ["--", "python", "agent.py"], "replay": ["last"], "diff": ["run-a", "run-b"]}


@cache
def typer_group() -> Any:
    """The Typer app as a click group, built once (10 ms a build, and the tests below parse thousands of lines)."""
    return get_command(app)


def typer_command(name: str) -> tuple[Any, Any]:
    group = typer_group()
    parent = Context(group, info_name="wop")
    return group.get_command(parent, name), parent


def typer_arguments(args: list[str]) -> dict[str, Any] | None:
    """What the Typer app passes on for this command line, as its action receives it (an enum as its value, an
    option given no value None); None: a usage error."""
    command, parent = typer_command(args[0])
    try:
        params = command.make_context(args[0], list(args[1:]), parent=parent).params
    except Exception:
        return None
    return {name: plain(value) for name, value in params.items()}


def plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value) or None
    return value


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["capture", "replay", "diff"]), st.lists(st.sampled_from(WORDS), max_size=8))
def test_a_command_line_the_fast_path_takes_is_read_as_typer_reads_it(command: str, words: list[str]) -> None:
    fast = fast_arguments([command, *words])
    if fast is not None:
        assert fast == (command, typer_arguments([command, *words]))


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
            for args in ([name, *option, *first, *rest], [name, *option, *option, *first, *rest],
                         [name, *first, *option, *rest]):  # capture: after `--`, the option is the program's word
                fast = fast_arguments(args)
                if fast is not None:
                    assert fast == (name, typer_arguments(args)), args
                    taken += args[1] == word
        assert (taken > 0) == (COMMANDS[name]["options"][word][1] != "decline"), (name, word)


def test_everyday_command_lines_take_the_fast_path_and_the_rest_go_to_typer() -> None:
    assert fast_arguments(["capture", "--", "python", "agent.py"]) is not None
    assert fast_arguments(["capture", "-n", "a", "python", "agent.py", "--json"]) is not None
    assert fast_arguments(["replay", "--strict", "last", "--json", "--", "python", "agent.py"]) is not None
    assert fast_arguments(["diff", "a", "b", "--json", "--ignore", "$.x", "--max-diffs", "3"]) is not None
    for args in (["capture"], ["replay", "--", "python"]):  # Typer passes them on too: the action says what is missing
        assert fast_arguments(args) == (args[0], typer_arguments(args))
    for args in (["capture", "--help"], ["replay", "--repeat", "last"], ["replay"], ["replay", "last", "--pdb", "-vj"],
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
