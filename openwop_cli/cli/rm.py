"""`wop rm`: delete captures."""

import typer


def command(
    captures: list[str] = typer.Argument(..., metavar="CAPTURE...", help="Captures to delete: paths, ids or prefixes, names, or `last`."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete captures. Every reference is resolved before anything is deleted; asks unless --yes.

    Only a capture's own files (manifest, events, checksums, blobs) are removed.

    \b
    Examples:
      wop rm 3f2a9c
      wop rm last --yes
    """
    from openwop_cli.cli.confirm import confirm_or_refuse
    from openwop_cli.store import delete_capture, resolve_capture

    paths = list(dict.fromkeys(resolve_capture(reference) for reference in captures))
    listing = ", ".join(str(path) for path in paths)
    if not confirm_or_refuse(f"delete {len(paths)} capture(s): {listing}?", yes):
        typer.echo("nothing deleted")
        raise typer.Exit(0)
    for path in paths:
        gone = delete_capture(path)
        typer.echo(f"deleted {path}" + ("" if gone else " (other files in that directory were kept)"))
