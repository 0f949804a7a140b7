"""`wop verify`: integrity of a capture, with the line and seq of whatever is wrong."""

import typer


def command(
    capture: str = typer.Argument(..., help="A capture: path, id or unique prefix, name, or `last`."),
    json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Check a capture: every field of the manifest and of every event, seq contiguity, sha256 and per-line
    checksums, every blob (the sources the manifest pins too), completeness.

    Exits 0 when the capture is intact and 3 when anything is wrong, naming the line, seq and field. A
    matching sha256 proves nothing about a line (anyone can recompute it): every line is checked.

    Also says whose capture it is: "signed here" (signed with your key, which wop keeps in your config
    directory, and unchanged since), "unsigned" (no signature, or another user's), or "bad signature"
    (signed with your key and changed since: exit 3). --json has it as `signature`.

    \b
    Examples:
      wop verify last
      wop verify ./tests/captures/checkout --json
    """
    from openwop_cli.cli.verify_action import verify

    raise typer.Exit(verify(capture=capture, json_output=json_output))
