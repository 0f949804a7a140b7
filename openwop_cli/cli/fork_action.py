"""What `wop fork` does once its options are parsed: serve the history up to a seq (or with an answer edited), then
run live, recording.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openwop_cli.replay.edits import Edit


def fork(*, capture: str, argv: list[str] | None, from_seq: int | None, edits: list[str] | None, offline: bool,
         set_values: list[str] | None, out: Path | None, name: str | None, json_output: bool, verbose: bool,
         trust: bool) -> None:
    """Run the fork, print its report and exit (0, or 1 when it diverged or its program failed)."""
    from openwop_cli.cli.replay_action import finish, run, split_overrides
    from openwop_cli.errors import UsageError
    from openwop_cli.replay.controls import ReplayControls

    if offline and not edits:
        raise UsageError("--offline goes with --edit: a --from-seq fork runs live after its branch point by design")
    controls = ReplayControls(edits=tuple(_edit(value) for value in edits or []), offline=offline, verbose=verbose,
                              trust=trust)
    outcome = run(capture, argv, policy="strict" if offline else "lenient", from_seq=from_seq, branch=True,
                  overrides=split_overrides(set_values or []), allow_tools=[], out=out, name=name,
                  json_output=json_output, proxy=False, controls=controls)
    finish(outcome, json_output)


def _edit(value: str) -> "Edit":
    from openwop_cli.cli.help import split_pair
    from openwop_cli.errors import UsageError
    from openwop_cli.replay.edits import parse_edit

    seq, text = split_pair(value, "--edit", "SEQ PATH=JSON, e.g. --edit 7 '$.response.text=\"no\"'")
    if not seq.isdigit():
        raise UsageError(f"--edit {seq!r}: SEQ must be the seq of a recorded result (a number; `wop show` lists them)")
    return parse_edit(int(seq), text)
