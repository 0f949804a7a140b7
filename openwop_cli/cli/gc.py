"""`wop gc`: delete old captures from the store (never anything outside it)."""

import time

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
    from openwop_cli.cli.confirm import confirm_or_refuse
    from openwop_cli.home import captures_root
    from openwop_cli.store import deletable_problem, delete_capture, is_inside_store, list_stored

    root = captures_root()
    cutoff = time.time() * 1000 - older_than * 86_400_000
    old = [entry.path for entry in list_stored(root)
           if entry.manifest is not None and entry.created_at < cutoff and is_inside_store(entry.path, root)]
    skipped = {str(path): problem for path in old if (problem := deletable_problem(path)) is not None}
    doomed = [path for path in old if str(path) not in skipped]
    deleted: list[str] = []
    kept: dict[str, list[str]] = {}
    if doomed and not dry_run and confirm_or_refuse(f"delete {len(doomed)} capture(s) older than {older_than:g} days from {root}?", yes):
        for path in doomed:
            deletion = delete_capture(path)
            deleted.append(str(path))
            if deletion.kept:
                kept[str(path)] = list(deletion.kept)
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json({"root": str(root), "dryRun": dry_run, "captures": [str(p) for p in doomed] if dry_run else deleted,
                    "kept": kept, "skipped": skipped})
        return
    verb = "would delete" if dry_run else "deleted"
    for path in doomed if dry_run else deleted:
        typer.echo(f"{verb} {path}" + (f" (kept what wop did not write: {', '.join(kept[path])})" if path in kept else ""))
    for path, problem in skipped.items():
        typer.echo(f"kept {path}: {problem}")
    typer.echo(f"{verb} {len(doomed) if dry_run else len(deleted)} capture(s) older than {older_than:g} days in {root}")
