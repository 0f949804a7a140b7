"""The commands' shape beyond Typer: help in plain words (`CAPTURE... [-- CMD [ARGS]...]`, `--type TYPE`, the
way click and man pages write them, instead of Typer's `{capture}` and `<list[str]>`), and options that take
two words (`--edit SEQ PATH=JSON`, repeatable) or a value that may be left out (`--repeat [N]`), which Typer
cannot declare."""

from typing import Any

from typer.core import TyperCommand


def metavar(param: Any) -> str:
    """What a parameter's value is called in help: its metavar, else its name in capitals."""
    if param.metavar:
        return param.metavar
    name = str(param.name or "").upper()
    return f"{name}..." if param.param_type_name == "argument" and param.nargs != 1 else name


def option_names(param: Any) -> str:
    """`-t, --type TYPE`, `--strict / --lenient`, `--json`: how an option is written."""
    names = ", ".join(sorted(param.opts, key=lambda name: name.startswith("--")))
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    return names if getattr(param, "is_flag", False) or getattr(param, "count", False) else f"{names} {metavar(param)}"


def option_help(param: Any) -> str:
    """An option's help text with its default, environment variable and whether it is required."""
    extras = []
    default = param.default
    if param.show_default is not False and default not in (None, False, (), []) and not callable(default):
        extras.append(f"default: {getattr(default, 'value', default)}")
    if param.envvar and getattr(param, "show_envvar", False):
        extras.append(f"env var: {param.envvar}")
    if param.required:
        extras.append("required")
    text = param.help or ""
    return f"{text}  [{'; '.join(extras)}]" if extras else text


PAIRED_OPTIONS = frozenset({"--edit"})
PAIR_SEPARATOR = "\x1f"
OPTIONAL_VALUES = {"--repeat": "3"}  # options whose value may be left out, and the value they then take


def normalize_args(args: list[str]) -> list[str]:
    """The words Typer can parse: `--edit 9 PATH=JSON` as one value `9<US>PATH=JSON`, and `--repeat` given no
    count as `--repeat 3`. Nothing after `--` (the program's own command line) is touched."""
    out, index = [], 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return out + args[index:]
        if arg in PAIRED_OPTIONS and index + 2 < len(args) and "--" not in args[index + 1:index + 3]:
            out += [arg, args[index + 1] + PAIR_SEPARATOR + args[index + 2]]
            index += 3
            continue
        out.append(arg)
        if arg in OPTIONAL_VALUES and not (index + 1 < len(args) and args[index + 1].isdigit()):
            out.append(OPTIONAL_VALUES[arg])
        index += 1
    return out


def split_pair(value: str, option: str, shape: str) -> tuple[str, str]:
    """The two words a paired option was given (a usage error when it got one)."""
    first, separator, second = value.partition(PAIR_SEPARATOR)
    if not separator:
        from openwop_cli.errors import UsageError

        raise UsageError(f"{option} takes two values: {shape}")
    return first, second


class WopCommand(TyperCommand):
    """A Typer command whose usage line and option list use metavars, and whose paired options take two words."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not ctx.allow_interspersed_args:  # `wop capture`: from its first word that is no option on, all is the program's
            return super().parse_args(ctx, args)
        return super().parse_args(ctx, normalize_args(args))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = ["[OPTIONS]"]
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                piece = metavar(param)
                pieces.append(piece if param.required or piece.startswith("[") else f"[{piece}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        params = [param for param in self.get_params(ctx) if not getattr(param, "hidden", False)]
        arguments = [(metavar(param), param.help or "") for param in params
                     if param.param_type_name == "argument" and getattr(param, "help", None)]
        options = [(option_names(param), option_help(param)) for param in params if param.param_type_name == "option"]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
