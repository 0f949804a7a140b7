"""How `wop COMMAND --help` reads: usage and options in plain words (`CAPTURE... [-- CMD [ARGS]...]`,
`--type TYPE`), the way click and man pages write them, instead of Typer's type labels (`{capture}`,
`<list[str]>`)."""

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


class WopCommand(TyperCommand):
    """A Typer command whose usage line and option list use metavars, not type labels."""

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
