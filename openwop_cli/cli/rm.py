"""`wop rm`: delete captures."""

from pathlib import Path

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
    from openwop_cli.cli.confirm import confirm_or_refuse
    from openwop_cli.store import delete_capture

    targets = list(dict.fromkeys(_checked(reference) for reference in captures))
    listing = ", ".join(str(path) for path in targets)
    if not confirm_or_refuse(f"delete {len(targets)} capture(s): {listing}?", yes):
        typer.echo("nothing deleted")
        raise typer.Exit(0)
    for path in targets:
        if path.is_symlink():
            target = path.resolve()
            path.unlink()
            typer.echo(f"removed the link {path} (the capture it points to, {target}, was kept)")
            continue
        deletion = delete_capture(path)
        if deletion.removed:
            typer.echo(f"deleted {path}")
        else:
            typer.echo(f"deleted the capture files in {path}; kept what wop did not write: {', '.join(deletion.kept)}")


def _checked(reference: str) -> Path:
    """The capture (or link to one) a reference names, or NotACapture saying why wop will not delete it."""
    from openwop_cli.errors import NotACapture
    from openwop_cli.store import deletable_problem, resolve_capture

    path = resolve_capture(reference)
    if path.is_symlink():
        problem = deletable_problem(path.resolve())
        if problem is not None:
            raise NotACapture(f"not deleting {path}: it is a link to {path.resolve()}, and {problem}")
        return path
    problem = deletable_problem(path)
    if problem is not None:
        raise NotACapture(f"not deleting {path}: {problem}; nothing was deleted")
    return path
