"""What `wop diff` does once its options are parsed: diff two runs, print the result, say whether they differ.

Kept free of Typer so the entry point's fast path (cli.entry) can run a diff without building the app.
"""

from typing import Any


def diff(*, run_a: str, run_b: str, ignore: list[str] | None, max_diffs: int | None, align: str,
         run_metadata: bool | None, json_output: bool, detail: bool) -> int:
    """Diff run_a and run_b (run_metadata None: the default for their kinds) and return wop's exit code."""
    from openwop_cli.cli.sources import diff_readers, open_run
    from openwop_cli.config import load_settings
    from openwop_cli.diff import rfc_result
    from openwop_cli.errors import UsageError

    if detail and not json_output:
        raise UsageError("--detail adds wop's fields to the JSON object: use it with --json")
    ignore = [*(ignore or []), *load_settings().ignore]
    reader_a, reader_b = open_run(run_a, resolve_blobs=True), open_run(run_b, resolve_blobs=True)
    result = diff_readers(reader_a, reader_b, ignore=ignore, max_diffs=max_diffs, align=align,
                          ignore_run_metadata=None if run_metadata is None else not run_metadata)
    for reader in (reader_a, reader_b):
        _refuse_damaged(reader)
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(result if detail else rfc_result(result))
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.diff import render_diff

        render_diff(make_console(), result, reader_a.manifest, reader_b.manifest)
    return 1 if result["divergedAtSeq"] is not None or result["stateDiff"]["status"]["changed"] else 0


def _refuse_damaged(reader: Any) -> None:
    """A diff of a damaged capture would compare a prefix as if it were the run: refuse (exit 3)."""
    from openwop_cli.errors import CorruptCapture

    problems = getattr(reader, "problems", [])
    if problems:
        where = getattr(reader, "capture_dir", "")
        raise CorruptCapture(f"cannot diff {where}: {problems[0]} (run `wop verify` for a full check)")
