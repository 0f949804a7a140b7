"""`wop replay CAPTURE… [-- CMD…]`: re-run recorded programs offline and report where they diverge."""

from pathlib import Path
from typing import Optional

import typer


def command(
    captures: list[str] = typer.Argument(..., metavar="CAPTURE... [-- CMD [ARGS]...]",
                                         help="Captures to replay (paths, ids, names, `last`, or directories holding captures); "
                                              "after --, a command to run instead of the recorded one."),
    strict: Optional[bool] = typer.Option(None, "--strict/--lenient",
                                          help="Stop at the first divergence (strict, for CI) or collect them all "
                                               "(lenient). Default: [tool.wop] policy, else strict."),
    from_seq: Optional[int] = typer.Option(None, "--from-seq", metavar="N", help="Check only events from seq N on."),
    allow_tool: Optional[list[str]] = typer.Option(None, "--allow-tool", metavar="NAME",
                                                   help="Let this tool run for real (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Write the replay capture to DIR "
                                       "(one capture only; with --repeat, DIR/replay-1…N)."),
    name: Optional[str] = typer.Option(None, "--name", "-n", metavar="NAME", help="Name of the replay capture."),
    proxy: bool = typer.Option(False, "--proxy", help="Serve LLM calls through a local proxy too (on by itself for captures made with --proxy)."),
    junit: Optional[Path] = typer.Option(None, "--junit", metavar="FILE", help="Also write JUnit XML: a testcase per capture, a failure per divergence."),
    repeat: Optional[int] = typer.Option(None, "--repeat", metavar="[N]", min=2,
                                         help="Replay N times (3 when N is left out; lenient unless --strict) and "
                                              "compare the replays with each other: any difference is uncaptured "
                                              "nondeterminism (exit 1)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", metavar="N", help="Replay N captures at once (default: "
                                       "the number of cores); their programs' output is then not shown."),
    shard: Optional[str] = typer.Option(None, "--shard", metavar="K/N", help="Replay only shard K of N: a stable "
                                        "share of the captures (by captureId), the same on every machine, for CI matrices."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON (the program's output goes to stderr)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Keep the program's whole traceback after a strict "
                                 "stop (by default the traceback the stop causes is one line)."),
    pdb: bool = typer.Option(False, "--pdb", help="At the first divergence, stop the program in pdb in the frame "
                             "that made the call (needs a terminal); `c` lets the replay go on."),
    break_at: Optional[int] = typer.Option(None, "--break-at", metavar="SEQ", help="Stop the program in pdb just "
                                           "before the recorded call at SEQ is answered (needs a terminal)."),
    compare_output: bool = typer.Option(True, "--output/--no-output", help="Compare the program's stdout and stderr "
                                        "with the recorded ones (the first differing line is an output_mismatch)."),
    exact_output: bool = typer.Option(False, "--exact-output", help="Compare the output as it is: without "
                                      "normalizing times, durations, addresses, ids, pids and temporary paths."),
    trust: bool = typer.Option(False, "--trust", help="Run the command the capture recorded even though the capture "
                               "is not trusted here (not signed by you, and not a Python script of this directory); "
                               "WOP_TRUST=1 does the same."),
) -> None:
    """Re-run each recorded command with every call served from its capture and the network blocked.

    Prints a report: the determinism score, each divergence (seq, code, JSON path, expected vs
    observed), the program files changed since the capture, and what the verdict compared: every
    recorded call's whole request (body, method, URL path), each value, state write and the
    program's stdout and stderr (after normalizing times, durations, addresses, pids and temporary
    paths; --exact-output compares them as they are). Several captures (or a directory of
    them) replay side by side (--jobs) with a progress bar, the report of each one that diverged and
    a summary table (at a terminal fitted to its width, a long path shortened in the middle; to a pipe
    one whole line a capture); --json lists every capture run with its name, id, path and verdict. Each replay
    is saved as a new capture linked to its source. Under GitHub Actions divergences are also printed
    as ::error annotations. Exits 0 when everything replays exactly, 1 on any divergence, 2 on bad
    input, 3 when a capture is corrupt or incomplete.

    A capture is data: its recorded command runs only when the capture is trusted — signed by you
    (wop signs every capture it writes with your key), or a Python interpreter running a script or
    module of the current directory's tree (a capture committed with its project, replayed in CI).
    Any other (`sh -c …`, a capture someone sent) exits 2 showing the command: give your own after
    --, or add --trust. In a batch such captures are skipped, listed with why, and the exit is 2.

    \b
    Examples:
      wop replay last
      wop replay support_agent --lenient
      wop replay tests/runs --junit replay.xml
      wop replay tests/runs -j 4 --shard 2/3 --json
      wop replay ./tests/runs/checkout --json -- python agent.py --order A-1001
      wop replay last --pdb -- python agent.py
      wop replay last --break-at 6
      wop replay --repeat last              why is my replay flaky? (3 replays compared)
      wop replay --repeat 5 support
      wop replay ./received-capture --trust   run the command it recorded, whoever made it
    """
    from openwop_cli.cli.replay_action import replay_captures

    replay_captures(captures, strict=strict, from_seq=from_seq, allow_tool=allow_tool, out=out, name=name, proxy=proxy,
                    junit=junit, repeat=repeat, jobs=jobs, shard=shard, json_output=json_output, verbose=verbose,
                    pdb=pdb, break_at=break_at, compare_output=compare_output, exact_output=exact_output,
                    trust=trust)
