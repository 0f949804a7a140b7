"""What `wop replay` and `wop fork` share: resolving captures, running them (many: host.replay_batch), printing reports, exit codes."""

import os
import sys
from pathlib import Path
from typing import Any


def run(capture: str, argv: list[str] | None, *, policy: str, from_seq: int | None, branch: bool,
        overrides: dict[str, Any], allow_tools: list[str], out: Path | None, name: str | None,
        json_output: bool, proxy: bool, controls: Any = None) -> Any:
    """Resolve CAPTURE and run the replay or fork (errors become WopErrors with their exit codes)."""
    from openwop_cli.store import resolve_capture

    return _replay(resolve_capture(capture), argv, policy=policy, from_seq=from_seq, branch=branch,
                   overrides=overrides, allow_tools=allow_tools, out=out, name=name, json_output=json_output,
                   proxy=proxy, controls=controls)


def _replay(source: Path, argv: list[str] | None, quiet: bool = False, settings: bool = False, **options: Any) -> Any:
    """Run one replay or fork (quiet: its program's output is not shown, one of several running at once; settings:
    apply [tool.wop], read once the program's interpreter is starting: its policy where none is given)."""
    from openwop_cli.home import captures_root
    from openwop_cli.host.replay_launch import launched_early
    from openwop_cli.replay.controls import ReplayControls

    json_output = options.pop("json_output")
    controls = (options.pop("controls", None) or ReplayControls())._replace(quiet=quiet)
    if controls.debugging:
        check_terminal()
    early = {key: options[key] for key in ("from_seq", "branch", "overrides", "allow_tools", "out", "proxy")}
    launch = launched_early(source, list(argv or []), store_root=captures_root(), output_to_stderr=json_output,
                            controls=controls, **early)
    try:
        if settings:
            options["policy"] = apply_settings(options["policy"])
        from openwop_cli.heldsignals import imported_held

        imported_held("orjson")  # first, and with Ctrl-C held: one landing in its initialization would crash wop
        from openwop_cli.host.run_replay import run_replay  # after the launch: the program starts while it loads
        from openwop_cli.report.plain import print_warning
    except BaseException:
        if launch is not None:
            launch.cancel()
        raise
    return run_replay(source, list(argv or []), warn=lambda message: print_warning(message.removeprefix("wop: ")),
                      store_root=captures_root(), output_to_stderr=json_output, controls=controls, launch=launch,
                      **options)


def apply_settings(policy: str | None) -> str:
    """The replay's policy (policy, else [tool.wop]'s); [tool.wop]'s telemetry hosts go in this process's environment
    (for its source index and the programs it starts: host.replay_launch.settled_environment)."""
    from openwop_cli.config import load_settings

    settings = load_settings()
    if settings.telemetry:
        from openwop_cli.replay.telemetry import ENV_EXTRA_HOSTS

        os.environ[ENV_EXTRA_HOSTS] = ",".join(settings.telemetry)
    return policy or settings.policy


def check_terminal() -> None:
    """--pdb and --break-at talk to the user at the program's prompt: refuse when there is no terminal."""
    from openwop_cli.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("--pdb and --break-at stop the program in pdb, which needs a terminal: stdin is not a "
                         "terminal here (run it in a shell, not in CI or behind a pipe)")


def finish(outcome: Any, json_output: bool) -> None:
    """Print the report and exit: 0 when nothing diverged (and, for a fork, the program succeeded), else 1."""
    _print_report(outcome, json_output)
    raise SystemExit(1 if outcome.failed else 0)


def run_many(references: list[str], argv: list[str], *, policy: str | None, from_seq: int | None,
             allow_tools: list[str], out: Path | None, name: str | None, json_output: bool, proxy: bool,
             junit: Path | None, controls: Any = None, jobs: int | None = None, shard: str | None = None) -> None:
    """`wop replay` over one or more captures (directories expand to the captures inside them; see host.replay_batch,
    imported only for a batch: one replay's program starts the sooner), with [tool.wop] applied (policy None: its
    policy)."""
    from openwop_cli.errors import UsageError
    from openwop_cli.report.plain import print_warning
    from openwop_cli.store import find_captures, is_directory_of_captures

    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: give 1 or more")
    shard_index = None
    if shard is not None:
        from openwop_cli.host.replay_batch import parse_shard

        shard_index = parse_shard(shard)  # a bad --shard is reported before the captures are looked for
    sources = find_captures(references, print_warning)
    options = dict(policy=policy, from_seq=from_seq, branch=False, overrides={}, allow_tools=allow_tools, out=out,
                   name=name, json_output=json_output, proxy=proxy, controls=controls)
    many = len(sources) > 1 or any(is_directory_of_captures(reference) for reference in references)
    if many and controls is not None and controls.debugging:
        raise UsageError(f"--pdb and --break-at stop one program at a time: give one capture, not {len(sources)}")
    if not many and junit is None and shard is None:
        finish(_replay(sources[0], argv, settings=True, **options), json_output)
    options["policy"] = apply_settings(policy)  # once, before the batch's threads copy this environment
    from openwop_cli.host import replay_batch as batch

    jobs = batch.default_jobs() if jobs is None else jobs
    if out is not None and len(sources) > 1:
        raise UsageError(f"--out names one directory, but {len(sources)} captures are being replayed")
    entries = batch.plan(sources)
    if shard_index is not None:
        entries = batch.select_shard(entries, *shard_index)
        if not entries:
            print_warning(f"shard {shard} holds none of the {len(sources)} captures")
    quiet = jobs > 1 and len(entries) > 1
    with _progress(len(entries)) as advance:
        batch.run_batch(entries, lambda source: _replay(source, argv, quiet=quiet, **options), jobs=jobs,
                        on_done=advance)
    _report_many(entries, json_output)
    if junit is not None:
        batch.write_junit(junit, entries)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from openwop_cli.report.batch import github_annotations

        for line in github_annotations(entries):
            print(line)
    raise SystemExit(batch.exit_code(entries))



def replay_captures(captures: list[str], *, strict: bool | None, from_seq: int | None, allow_tool: list[str] | None,
                    out: Path | None, name: str | None, proxy: bool, junit: Path | None, repeat: int | None,
                    jobs: int | None, shard: str | None, json_output: bool, verbose: bool, pdb: bool,
                    break_at: int | None, compare_output: bool = True, exact_output: bool = False,
                    trust: bool = False) -> None:
    """`wop replay` once its options are parsed (free of Typer: cli.entry's fast path calls it too); exits. The
    settings are read once a single replay's program is starting (_replay)."""
    from openwop_cli.errors import UsageError
    from openwop_cli.replay.controls import ReplayControls

    references, argv = split_command(captures)
    if not references:
        raise UsageError("give the capture to replay before --, e.g. `wop replay last -- python agent.py`")
    if repeat is not None:
        apply_settings(None)
        _repeat(references, argv, repeat, "strict" if strict else "lenient", allow_tool, out, name, json_output, proxy,
                trust)
    policy = ("strict" if strict else "lenient") if strict is not None else None
    run_many(references, argv, policy=policy, from_seq=from_seq, allow_tools=list(allow_tool or []), out=out,
             name=name, json_output=json_output, proxy=proxy, junit=junit, jobs=jobs, shard=shard,
             controls=ReplayControls(verbose=verbose, pdb=pdb, break_at=break_at, compare_output=compare_output,
                                     exact_output=exact_output, trust=trust))


def _repeat(references: list[str], argv: list[str], times: int, policy: str, allow_tool: list[str] | None,
            out: Path | None, name: str | None, json_output: bool, proxy: bool, trust: bool) -> None:
    """`--repeat N`: N replays of one capture compared with each other; exit 1 on any difference or divergence."""
    from openwop_cli.errors import UsageError
    from openwop_cli.home import captures_root
    from openwop_cli.host.replay_repeat import run_repeated
    from openwop_cli.replay.controls import ReplayControls
    from openwop_cli.report.plain import print_warning
    from openwop_cli.store import find_captures

    sources = find_captures(references, print_warning)
    if len(sources) != 1:
        raise UsageError(f"--repeat replays one capture, but {len(sources)} were given")
    outcome = run_repeated(sources[0], argv, times, out=out, policy=policy, from_seq=None, branch=False, overrides={},
                           allow_tools=list(allow_tool or []), name=name,
                           warn=lambda message: print_warning(message.removeprefix("wop: ")),
                           store_root=captures_root(), output_to_stderr=json_output, proxy=proxy,
                           controls=ReplayControls(trust=trust))
    if json_output:
        from openwop_cli.cli.output import print_json
        from openwop_cli.report.repeat import repeat_json

        print_json(repeat_json(outcome))
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.repeat import render_repeat

        render_repeat(make_console(), outcome)
    raise SystemExit(1 if outcome.failed else 0)


def split_command(items: list[str]) -> tuple[list[str], list[str]]:
    """CAPTURE… and the command after `--` (click merges both into one list; the command line still tells them apart)."""
    if "--" not in sys.argv:
        return items, []
    command = sys.argv[sys.argv.index("--") + 1:]
    if not command or items[len(items) - len(command):] != command:
        return items, []
    return items[: len(items) - len(command)], command


def split_overrides(pairs: list[str]) -> dict[str, str]:
    """--set KEY=VALUE pairs as KEY → VALUE, as typed (host.overrides reads each against what the capture recorded)."""
    from openwop_cli.errors import UsageError

    overrides: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE, e.g. --set greeting=0")
        overrides[key] = value
    return overrides


def _print_report(outcome: Any, json_output: bool) -> None:
    if json_output:
        from openwop_cli.cli.output import print_json
        from openwop_cli.report.verdict import replay_json

        print_json(replay_json(outcome))
    else:
        from openwop_cli.report.replay_lines import print_clean_replay

        if print_clean_replay(sys.stdout, outcome):
            return
        from openwop_cli.report.console import make_console
        from openwop_cli.report.verdict import render_replay

        render_replay(make_console(), outcome)


def _report_many(entries: list[Any], json_output: bool) -> None:
    if json_output:
        from openwop_cli.cli.output import print_json
        from openwop_cli.report.batch import batch_json

        print_json(batch_json(entries))
    else:
        from openwop_cli.report.batch import render_batch
        from openwop_cli.report.console import make_console

        render_batch(make_console(), entries)


class _progress:
    """A progress bar on stderr while several captures replay (nothing for one, or when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._bar: Any = None

    def __enter__(self) -> Any:
        if self.total > 1 and sys.stderr.isatty():
            from rich.progress import Progress

            from openwop_cli.report.console import make_console

            self._bar = Progress(console=make_console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("replaying", total=self.total)
        return self._advance

    def _advance(self, entry: Any) -> None:
        if self._bar is not None:
            from rich.markup import escape

            from openwop_cli.report.escape import clean

            self._bar.update(self._task, advance=1, description=escape(f"replayed {clean(entry.name)}"))

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()
