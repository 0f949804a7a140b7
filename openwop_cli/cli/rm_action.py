"""What `wop rm` does once its options are parsed: delete captures, only wop's own files, after asking.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

from pathlib import Path


def delete_captures(*, captures: list[str], yes: bool) -> int:
    """Resolve and check every reference, ask (unless yes), delete; returns wop's exit code."""
    from openwop_cli.cli.confirm import confirm_or_refuse
    from openwop_cli.report.escape import clean_inline as shown
    from openwop_cli.store import delete_capture

    targets = list(dict.fromkeys(_checked(reference) for reference in captures))
    listing = ", ".join(shown(path) for path in targets)
    if not confirm_or_refuse(f"delete {len(targets)} capture(s): {listing}?", yes):
        print("nothing deleted", flush=True)
        return 0
    for path in targets:
        if path.is_symlink():
            target = path.resolve()
            path.unlink()
            print(f"removed the link {shown(path)} (the capture it points to, {shown(target)}, was kept)", flush=True)
            continue
        deletion = delete_capture(path)
        if deletion.removed:
            print(f"deleted {shown(path)}", flush=True)
        else:
            print(f"deleted the capture files in {shown(path)}; kept what wop did not write: "
                  f"{', '.join(map(shown, deletion.kept))}", flush=True)
    return 0


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
