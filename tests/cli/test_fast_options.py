"""cli/fast_options.py: generated from the Typer declarations, never out of date, and every option the fast path
cannot read exactly as Typer does left to Typer."""

import importlib.util
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

from openwop_cli.cli.entry import fast_arguments
from tests.conftest import ROOT


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_fast_options", ROOT / "scripts" / "make_fast_options.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fast_path_tables_are_up_to_date_with_the_typer_declarations() -> None:
    on_disk = (ROOT / "openwop_cli" / "cli" / "fast_options.py").read_text(encoding="utf-8")
    assert on_disk == generator().source(), "run `python scripts/make_fast_options.py`"


class Mode(str, Enum):
    fast = "fast"
    slow = "slow"


def everything(
    words: Optional[list[str]] = typer.Argument(None),
    label: Optional[str] = typer.Option(None, "--label", "-l"),
    mode: Mode = typer.Option(Mode.fast, "--mode"),
    size: Optional[int] = typer.Option(None, "--size", min=0, max=9),
    keep: bool = typer.Option(True, "--keep/--drop"),
    tags: Optional[list[str]] = typer.Option(None, "--tag"),
    upper_mode: Optional[Mode] = typer.Option(None, "--any-case-mode", case_sensitive=False),
    existing: Optional[Path] = typer.Option(None, "--existing", exists=True),
    resolved: Optional[Path] = typer.Option(None, "--resolved", resolve_path=True),
    ratio: Optional[float] = typer.Option(None, "--ratio"),
    when: Optional[datetime] = typer.Option(None, "--when"),
    loud: int = typer.Option(0, "--loud", count=True),
    token: Optional[str] = typer.Option(None, "--token", envvar="SAMPLE_TOKEN"),
    checked: Optional[str] = typer.Option(None, "--checked", callback=lambda value: value),
    repeat: Optional[int] = typer.Option(None, "--repeat"),
) -> None:
    """A command with every kind of option."""


def two_words(pair: tuple[str, str] = typer.Option(("a", "b"), "--pair")) -> None:
    """An option taking two words."""


def needs(source: Optional[Path] = typer.Argument(None), rest: Optional[list[str]] = typer.Argument(None),
          days: float = typer.Option(..., "--days", min=0), report: Path = typer.Option(Path("out.html"), "--report")
          ) -> None:
    """A sub-app's command with a required option, an optional path argument followed by the rest of the words, and a
    path default."""


def sample_app() -> typer.Typer:
    sample = typer.Typer()
    sample.command("everything")(everything)
    sample.command("two-words")(two_words)
    sample.command("loose", context_settings={"ignore_unknown_options": True})(two_words)
    group = typer.Typer()
    group.command("needs")(needs)
    group.command("unread")(two_words)
    sample.add_typer(group, name="group")
    return sample


def test_an_option_the_fast_path_cannot_read_exactly_goes_to_typer() -> None:
    here = "tests.cli.test_fast_options"
    text = generator().source(sample_app(), {"everything": f"{here}:everything", "two-words": f"{here}:two_words",
                                             "loose": f"{here}:two_words", "group needs": f"{here}:needs"})
    tables: dict[str, Any] = {}
    exec(compile(text, "fast_options.py", "exec"), tables)
    options = tables["COMMANDS"]["everything"]["options"]
    kinds = {word: entry[1] for word, entry in options.items()}
    assert kinds == {
        "--label": "text", "-l": "text", "--mode": "choice", "--size": "int", "--keep": "flag", "--drop": "flag",
        "--tag": "text", "--ratio": "float",
        # Typer would read these otherwise (any case, a missing file, an absolute path, a date, a count, the
        # environment, a callback, a value that may be left out: cli.help.OPTIONAL_VALUES)
        "--any-case-mode": "decline", "--existing": "decline", "--resolved": "decline", "--when": "decline",
        "--loud": "decline", "--token": "decline", "--checked": "decline", "--repeat": "decline",
    }
    assert options["--size"][3] == (0, 9) and options["--mode"][3] == ("fast", "slow")
    assert options["--drop"][3] is False and options["--tag"][2] is True
    assert tables["COMMANDS"]["everything"]["defaults"]["mode"] == "fast"
    assert "SAMPLE_TOKEN" in tables["DECLINE_IF_SET"] and "WOP_DEBUG" not in tables["DECLINE_IF_SET"]
    assert tables["COMMANDS"]["two-words"]["options"]["--pair"][1] == "decline"
    assert "loose" not in tables["COMMANDS"] and "# loose: read by Typer (it takes words it does not declare)" in text
    needs = tables["COMMANDS"]["group needs"]
    assert needs["arguments"] == (("source", 1, False, "path"), ("rest", -1, False, "text"))
    assert needs["required"] == ("days",) and needs["options"]["--days"] == ("days", "float", False, (0, None))
    assert needs["defaults"]["report"] == Path("out.html")
    assert "# group unread: read by Typer (no action in ACTIONS)" in text


def test_a_declined_option_sends_the_command_line_to_typer() -> None:
    assert fast_arguments(["replay", "--repeat", "3", "last"]) is None
    assert fast_arguments(["replay", "last"]) is not None


def test_an_action_that_does_not_take_the_commands_parameters_stops_the_generator() -> None:
    here = "tests.cli.test_fast_options"
    try:
        generator().source(sample_app(), {"everything": f"{here}:two_words"})
    except SystemExit as exc:
        assert "make them agree" in str(exc)
    else:
        raise AssertionError("the generator wrote tables for an action that cannot take them")


def test_every_action_is_under_the_contract_that_keeps_typer_out() -> None:
    import tomllib

    from openwop_cli.cli.fast_options import COMMANDS

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    kept_out = next(contract for contract in contracts if contract.get("forbidden_modules") == ["typer", "click", "pydantic"])
    modules = {shape["action"].partition(":")[0] for shape in COMMANDS.values()}
    assert modules | {"openwop_cli.cli.entry", "openwop_cli.cli.fast_options"} == set(kept_out["source_modules"])
