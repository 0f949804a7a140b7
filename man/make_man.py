"""Generate the man pages in man/ from the wop command line's own help: `python man/make_man.py`.

One page for `wop` (wop.1) and one per command (wop-capture.1, wop-replay.1, …). The pages are
deterministic (no dates), so tests/test_man_pages.py can fail when one is out of date.
"""

import sys
from pathlib import Path
from typing import Any

import typer

from openwop_cli._version import __version__
from openwop_cli.cli.app import app

HERE = Path(__file__).resolve().parent
EXIT_STATUS = [
    ("0", "success: identical, no divergence"),
    ("1", "a divergence or difference was found"),
    ("2", "usage error or bad input"),
    ("3", "the capture is corrupt, incomplete or from a newer wop"),
    ("70", "internal error (a bug in wop; run with --debug)"),
]


def pages() -> dict[str, str]:
    """File name → roff text for every page (a command group gets one, and each of its commands)."""
    result: dict[str, str] = {}
    _add_pages(result, "wop", typer.main.get_command(app))
    return result


def _add_pages(result: dict[str, str], title: str, command: Any) -> None:
    subcommands = sorted(getattr(command, "commands", {}))
    result[f"{title.replace(' ', '-')}.1"] = _page(title, command, subcommands)
    for name in subcommands:
        _add_pages(result, f"{title} {name}", command.commands[name])


def write(directory: Path = HERE) -> list[Path]:
    """Write every page into directory; returns the paths written."""
    written = []
    for name, text in pages().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _page(title: str, command: Any, subcommands: list[str]) -> str:
    dashed = title.replace(" ", "-")
    help_text = (command.help or "").replace("\b\n", "")
    summary, _, body = help_text.partition("\n")
    lines = [f'.TH "{dashed.upper()}" "1" "" "wop {__version__}" "wop manual"',
             ".SH NAME", f"{_escape(dashed)} \\- {_escape(summary.strip().rstrip('.'))}",
             ".SH SYNOPSIS", f".B {_escape(title)}", _escape(" ".join(_usage(command)))]
    lines += [".SH DESCRIPTION", *_paragraphs(body)]
    if subcommands:
        lines.append(".SH COMMANDS")
        for name in subcommands:
            sub = command.commands[name]  # type: ignore[attr-defined]
            lines += [".TP", f".BR {dashed}-{_escape(name)} (1)", _escape((sub.help or "").split("\n")[0])]
    options = [param for param in command.params if param.param_type_name == "option" and not param.hidden]
    if options:
        lines.append(".SH OPTIONS")
        for option in options:
            names = ", ".join([*option.opts, *option.secondary_opts])
            metavar = "" if option.is_flag else f" {option.metavar or str(option.name).upper()}"
            lines += [".TP", f".B {_escape(names + metavar)}", _escape(option.help or "")]
    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f".B {code}", _escape(meaning)]
    see_also = [f"{_escape(dashed)}\\-{_escape(name)}(1)" for name in subcommands] or ["wop(1)"]
    lines += [".SH SEE ALSO", ", ".join(see_also)]
    return "\n".join(line for line in lines if line is not None) + "\n"


def _usage(command: Any) -> list[str]:
    parts = ["[OPTIONS]"]
    for param in command.params:
        if param.param_type_name == "argument":
            parts.append(param.metavar or param.name.upper())
    return parts


def _paragraphs(body: str) -> list[str]:
    out: list[str] = []
    for block in body.strip().split("\n\n"):
        lines = [line for line in block.split("\n")]
        if lines and lines[0].strip().endswith(":") and len(lines) > 1:
            out += [".PP", f".B {_escape(lines[0].strip())}", ".nf", *(_escape(line.strip()) for line in lines[1:]), ".fi"]
        elif block.strip():
            out += [".PP", _escape(" ".join(line.strip() for line in lines))]
    return out


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


if __name__ == "__main__":
    for path in write():
        print(path.relative_to(HERE.parent), file=sys.stderr)
