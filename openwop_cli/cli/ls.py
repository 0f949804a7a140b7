"""`wop ls`: the captures in the store."""

import typer


def command(json_output: bool = typer.Option(False, "--json", help="Print the list as JSON.")) -> None:
    """List stored captures, oldest first: id, name, age, status, events, duration, command.

    At a terminal the table fits its width: the id, name, age, status and events are never cut; a long
    command keeps its program, its script and what else fits, with … for the rest, and moves to a line
    of its own under the row when the row leaves it too little room. To a pipe or a file each capture
    is one line, nothing shortened whatever COLUMNS says, of tab-separated fields: full id, name,
    created (ISO 8601), status, events, duration, command. --json is the same list as JSON.

    \b
    Examples:
      wop ls
      wop ls | grep checkout | cut -f1
      wop ls --json | jq '.[].captureId'
    """
    from openwop_cli.cli.ls_action import list_captures

    raise typer.Exit(list_captures(json_output=json_output))
