"""What `wop replay` and `wop fork` share: resolving the capture, running it, printing the report, exiting."""

from pathlib import Path
from typing import Any

import typer


def run(capture: str, argv: list[str] | None, *, policy: str, from_seq: int | None, branch: bool,
        overrides: dict[str, Any], allow_tools: list[str], out: Path | None, name: str | None,
        json_output: bool, proxy: bool) -> Any:
    """Resolve CAPTURE and run the replay or fork (errors become WopErrors with their exit codes)."""
    from openwop_cli.replay.run import run_replay
    from openwop_cli.report.console import print_warning
    from openwop_cli.store import captures_root, resolve_capture

    source = resolve_capture(capture)
    return run_replay(source, list(argv or []), policy=policy, from_seq=from_seq, branch=branch,
                      overrides=overrides, allow_tools=allow_tools, out=out, name=name,
                      warn=lambda message: print_warning(message.removeprefix("wop: ")),
                      store_root=captures_root(), output_to_stderr=json_output, proxy=proxy)


def finish(outcome: Any, json_output: bool) -> None:
    """Print the report and exit: 0 when nothing diverged (and, for a fork, the program succeeded), else 1."""
    if json_output:
        from openwop_cli.cli.output import print_json
        from openwop_cli.report.replay import replay_json

        print_json(replay_json(outcome))
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.replay import render_replay

        render_replay(make_console(), outcome)
    failed = outcome.diverged or (outcome.branch and outcome.capture.exit_code != 0)
    raise typer.Exit(1 if failed else 0)


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """--set KEY=VALUE pairs: VALUE parsed as JSON when it is JSON, else kept as text."""
    import orjson

    from openwop_cli.errors import UsageError

    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE, e.g. --set greeting=0")
        try:
            overrides[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            overrides[key] = value
    return overrides
