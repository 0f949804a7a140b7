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
    from openwop_cli.errors import EXIT_BAD_CAPTURE
    from openwop_cli.format.verify import verify_capture
    from openwop_cli.store import resolve_capture

    report = verify_capture(resolve_capture(capture))
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(report.to_json())
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.verify import render_verify

        render_verify(make_console(), report)
    if not report.ok:
        raise typer.Exit(EXIT_BAD_CAPTURE)
