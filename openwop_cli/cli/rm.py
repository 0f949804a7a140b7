"""`wop rm`: delete captures."""

import typer


def command(
    captures: list[str] = typer.Argument(..., metavar="CAPTURE...", help="Captures to delete: paths, ids or prefixes, names, or `last`."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete captures. Every reference is resolved and checked before anything is deleted; asks unless --yes.

    Only a valid wop capture is deleted (a wop manifest whose captureId its events carry), and only
    the files wop writes (manifest, events, checksums, blobs); anything else in the directory is kept
    and listed. A symbolic link to a capture is removed, never what it points to. A capture that a
    running `wop capture` (or replay, or fork) is still writing is refused (exit 2).

    \b
    Examples:
      wop rm 3f2a9c
      wop rm last --yes
    """
    from openwop_cli.cli.rm_action import delete_captures

    raise typer.Exit(delete_captures(captures=captures, yes=yes))
