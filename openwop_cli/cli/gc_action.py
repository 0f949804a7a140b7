"""What `wop gc` does once its options are parsed: delete the store's old captures (never anything outside it).

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

import time


def delete_old_captures(*, older_than: float, dry_run: bool, yes: bool, json_output: bool) -> int:
    """Delete (dry_run: list) the store's captures created more than older_than days ago; returns wop's exit code."""
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
        return 0
    from openwop_cli.report.escape import clean_inline as shown

    verb = "would delete" if dry_run else "deleted"
    listed = [str(path) for path in doomed] if dry_run else deleted
    for name in listed:
        left = f" (kept what wop did not write: {', '.join(map(shown, kept[name]))})" if name in kept else ""
        print(f"{verb} {shown(name)}{left}")
    for name, problem in skipped.items():
        print(f"kept {shown(name)}: {shown(problem)}")
    print(f"{verb} {len(listed)} capture(s) older than {older_than:g} days in {shown(root)}")
    return 0
