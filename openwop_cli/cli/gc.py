"""`wop gc`: delete old captures from the store (never anything outside it)."""

import typer


def command(
    older_than: float = typer.Option(..., "--older-than", min=0, metavar="DAYS", help="Delete captures created more than DAYS ago."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted, delete nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
    json_output: bool = typer.Option(False, "--json", help="Print the deleted (or, with --dry-run, doomed) captures as JSON."),
) -> None:
    """Delete store captures older than DAYS days. Only valid wop captures in directories inside the store
    are touched (never through a link, never one a running wop is still writing), only the files wop
    writes; what was kept is listed.

    \b
    Examples:
      wop gc --older-than 30 --dry-run
      wop gc --older-than 7 --yes
    """
    from openwop_cli.cli.gc_action import delete_old_captures

    raise typer.Exit(delete_old_captures(older_than=older_than, dry_run=dry_run, yes=yes, json_output=json_output))
