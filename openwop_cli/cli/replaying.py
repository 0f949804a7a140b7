"""What `wop replay` and `wop fork` share: resolving captures, running them, printing reports, JUnit, exit codes."""

import os
import sys
import time
from pathlib import Path
from typing import Any

import typer


def run(capture: str, argv: list[str] | None, *, policy: str, from_seq: int | None, branch: bool,
        overrides: dict[str, Any], allow_tools: list[str], out: Path | None, name: str | None,
        json_output: bool, proxy: bool, controls: Any = None) -> Any:
    """Resolve CAPTURE and run the replay or fork (errors become WopErrors with their exit codes)."""
    from openwop_cli.store import resolve_capture

    return _replay(resolve_capture(capture), argv, policy=policy, from_seq=from_seq, branch=branch,
                   overrides=overrides, allow_tools=allow_tools, out=out, name=name, json_output=json_output,
                   proxy=proxy, controls=controls)


def _replay(source: Path, argv: list[str] | None, **options: Any) -> Any:
    from openwop_cli.replay.run import run_replay
    from openwop_cli.report.console import print_warning
    from openwop_cli.store import captures_root

    from openwop_cli.replay.controls import ReplayControls

    json_output = options.pop("json_output")
    controls = options.pop("controls", None) or ReplayControls()
    if controls.debugging:
        check_terminal()
    return run_replay(source, list(argv or []), warn=lambda message: print_warning(message.removeprefix("wop: ")),
                      store_root=captures_root(), output_to_stderr=json_output, controls=controls, **options)


def check_terminal() -> None:
    """--pdb and --break-at talk to the user at the program's prompt: refuse when there is no terminal."""
    from openwop_cli.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("--pdb and --break-at stop the program in pdb, which needs a terminal: stdin is not a "
                         "terminal here (run it in a shell, not in CI or behind a pipe)")


def finish(outcome: Any, json_output: bool) -> None:
    """Print the report and exit: 0 when nothing diverged (and, for a fork, the program succeeded), else 1."""
    _print_report(outcome, json_output)
    raise typer.Exit(1 if outcome.failed else 0)


def run_many(references: list[str], argv: list[str], *, policy: str, from_seq: int | None, allow_tools: list[str],
             out: Path | None, name: str | None, json_output: bool, proxy: bool, junit: Path | None,
             controls: Any = None) -> None:
    """`wop replay` over one or more captures (directories expand to the captures inside them)."""
    from openwop_cli.errors import EXIT_BAD_CAPTURE, CaptureError, UsageError

    sources = expand_captures(references)
    if out is not None and len(sources) > 1:
        raise UsageError(f"--out names one directory, but {len(sources)} captures are being replayed")
    options = dict(policy=policy, from_seq=from_seq, branch=False, overrides={}, allow_tools=allow_tools, out=out,
                   name=name, json_output=json_output, proxy=proxy, controls=controls)
    if len(sources) == 1 and junit is None:
        finish(_replay(sources[0], argv, **options), json_output)
    results: list[tuple[Path, Any, float]] = []
    with _progress(len(sources)) as advance:
        for source in sources:
            started = time.monotonic()
            try:
                result: Any = _replay(source, argv, **options)
            except CaptureError as exc:
                result = exc
            results.append((source, result, time.monotonic() - started))
            advance(source)
    _report_many(results, json_output)
    if junit is not None:
        write_junit(junit, results)
    _annotate_for_github(results)
    bad = any(isinstance(result, Exception) for _, result, _ in results)
    diverged = any(not isinstance(result, Exception) and result.diverged for _, result, _ in results)
    raise typer.Exit(EXIT_BAD_CAPTURE if bad else 1 if diverged else 0)


def split_command(items: list[str]) -> tuple[list[str], list[str]]:
    """CAPTURE… and the command after `--` (click merges both into one list; the command line still tells them apart)."""
    if "--" not in sys.argv:
        return items, []
    command = sys.argv[sys.argv.index("--") + 1:]
    if not command or items[len(items) - len(command):] != command:
        return items, []
    return items[: len(items) - len(command)], command


def expand_captures(references: list[str]) -> list[Path]:
    """Each reference resolved; a directory that is not a capture stands for every capture below it."""
    from openwop_cli.errors import CaptureNotFound
    from openwop_cli.format.manifest import MANIFEST_NAME
    from openwop_cli.store import resolve_capture

    found: list[Path] = []
    for reference in references:
        path = Path(reference).expanduser()
        if path.is_dir() and not (path / MANIFEST_NAME).is_file():
            inside = sorted(manifest.parent for manifest in path.rglob(MANIFEST_NAME)
                            if not any(part.startswith(".") for part in manifest.relative_to(path).parts))
            runnable = [capture for capture in inside if not _recorded_by_pytest(capture)]
            if len(runnable) < len(inside):
                from openwop_cli.report.console import print_warning

                print_warning(f"{len(inside) - len(runnable)} captures under {path} were recorded by the pytest plugin "
                              "and are replayed by pytest, not here")
            if not runnable:
                raise CaptureNotFound(f"no captures to replay under {path}")
            found.extend(runnable)
        else:
            found.append(resolve_capture(reference))
    return found


def _recorded_by_pytest(capture: Path) -> bool:
    from openwop_cli.errors import CaptureError
    from openwop_cli.format.manifest import read_manifest

    try:
        return bool((read_manifest(capture).get("program") or {}).get("pytest"))
    except CaptureError:
        return False


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


def write_junit(path: Path, results: list[tuple[Path, Any, float]]) -> None:
    """JUnit XML: one testcase per capture, a <failure> per divergence, an <error> for a capture that could not run."""
    import xml.etree.ElementTree as ET

    failures = sum(len(result.divergences) > 0 for _, result, _ in results if not isinstance(result, Exception))
    errors = sum(isinstance(result, Exception) for _, result, _ in results)
    suite = ET.Element("testsuite", name="wop replay", tests=str(len(results)), failures=str(failures),
                       errors=str(errors), time=f"{sum(seconds for *_, seconds in results):.3f}")
    for source, result, seconds in results:
        case = ET.SubElement(suite, "testcase", classname="wop.replay", name=_name_and_id(source, result)[0],
                             file=str(source), time=f"{seconds:.3f}")
        if isinstance(result, Exception):
            ET.SubElement(case, "error", message=getattr(result, "message", str(result)), type=type(result).__name__)
            continue
        for divergence in result.divergences:
            where = f" at seq {divergence.event_seq}" if divergence.event_seq is not None else ""
            failure = ET.SubElement(case, "failure", type=divergence.code,
                                    message=f"{divergence.code}{where} {divergence.json_path or ''}".strip())
            expected, observed = divergence.sides()
            failure.text = f"{divergence.detail}\nexpected: {expected!r}\nobserved: {observed!r}"
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _print_report(outcome: Any, json_output: bool) -> None:
    if json_output:
        from openwop_cli.cli.output import print_json
        from openwop_cli.report.replay import replay_json

        print_json(replay_json(outcome))
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.replay import render_replay

        render_replay(make_console(), outcome)


def _report_many(results: list[tuple[Path, Any, float]], json_output: bool) -> None:
    if json_output:
        from openwop_cli.cli.output import print_json
        from openwop_cli.report.replay import replay_json

        print_json([{"capture": str(source), "error": result.message} if isinstance(result, Exception)
                    else replay_json(result) for source, result, _ in results])
        return
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from openwop_cli.report.console import clean, make_console, status_style
    from openwop_cli.report.replay import render_replay

    console = make_console()
    for _, result, _ in results:
        if not isinstance(result, Exception) and result.diverged:
            render_replay(console, result)
    table = Table(title=f"wop replay: {len(results)} captures", show_edge=False, pad_edge=False)
    for column in ("capture", "id", "path", "result", "score", "divergences", "first at"):
        table.add_column(column, overflow="fold")
    for source, result, _ in results:
        name, capture_id = _name_and_id(source, result)
        if isinstance(result, Exception):
            table.add_row(clean(name), clean(capture_id), clean(str(source)), Text("error", status_style("error")), "",
                          "", clean(result.message))
            continue
        verdict = "diverged" if result.diverged else "ok"
        first = result.score.get("firstDivergenceSeq")
        table.add_row(clean(name), clean(capture_id), clean(str(source)),
                      Text(verdict, status_style("error" if result.diverged else "ok")),
                      f"{result.score.get('score', 1.0):.2f}", str(len(result.divergences)),
                      "" if first is None else f"seq {first}")
    console.print(table)


def _annotate_for_github(results: list[tuple[Path, Any, float]]) -> None:
    """Under GitHub Actions, each divergence (and each capture that could not run) as an ::error annotation."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    for source, result, _ in results:
        title = _escape(f"wop replay: {_label(source, result)}")
        if isinstance(result, Exception):
            print(f"::error title={title}::{_escape(result.message)}")
            continue
        for divergence in result.divergences:
            where = f" at seq {divergence.event_seq}" if divergence.event_seq is not None else ""
            path = f" {divergence.json_path}" if divergence.json_path else ""
            message = _escape(f"{divergence.code}{where}{path}: {divergence.detail}")
            print(f"::error title={title}::{message}")


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace("::", ": :")


def _label(source: Path, result: Any) -> str:
    """A capture as one line: its name, id and path (two captures of one script share the name)."""
    name, capture_id = _name_and_id(source, result)
    return f"{name} ({capture_id}) {source}" if capture_id else f"{name} {source}"


def _name_and_id(source: Path, result: Any) -> tuple[str, str]:
    if isinstance(result, Exception):
        return source.name, ""
    manifest = result.source_manifest
    return str(manifest.get("name") or source.name), str(manifest.get("captureId") or "")


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

    def _advance(self, source: Path) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=f"replayed {source.name}")

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()
