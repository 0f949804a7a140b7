"""Starting a replay's program early: before the replay reads its source capture, and before it imports what it
needs for that, so the program's interpreter starts meanwhile (host.launcher.ChildLaunch; the program waits for
its go before anything of its own runs)."""

import json
import os
from pathlib import Path
from typing import Any

from openwop_cli.errors import UsageError
from openwop_cli.format.imported import watches_ambient
from openwop_cli.format.manifest import manifest_hint
from openwop_cli.host.launcher import ChildLaunch, starts_own_python, starts_plainly
from openwop_cli.replay.controls import ReplayControls
from openwop_cli.trust import recorded_command_trust, trust_from_environment
from openwop_cli.wire.environ import ENV_ALLOW_TOOLS, ENV_FROM_SEQ, ENV_OVERRIDES, ENV_POLICY, ENV_SOURCE


def replay_environment(source_dir: Path, from_seq: int, branch: bool, overrides: dict[str, Any],
                       allow_tools: list[str], controls: ReplayControls) -> dict[str, str]:
    """What a replayed process is told through its environment (runtime.replay_child reads it) but the policy
    ([tool.wop] may decide it: settled_environment)."""
    from openwop_cli.replay.credentials import placeholder_credentials

    return {
        **({} if branch else placeholder_credentials()),
        ENV_SOURCE: str(source_dir.resolve()),
        ENV_FROM_SEQ: str(from_seq),
        ENV_ALLOW_TOOLS: json.dumps(allow_tools),
        ENV_OVERRIDES: json.dumps(overrides),
        **controls.environment(),
    }


def settled_environment(policy: str) -> dict[str, str]:
    """What a replayed process is told that the replay's settings decide: the policy, and [tool.wop]'s telemetry hosts
    (put in this process's environment by the settings: cli.replay_action)."""
    from openwop_cli.replay.telemetry import ENV_EXTRA_HOSTS

    hosts = os.environ.get(ENV_EXTRA_HOSTS)
    return {ENV_POLICY: policy, **({ENV_EXTRA_HOSTS: hosts} if hosts is not None else {})}


def launched_early(source_dir: Path, argv: list[str], *, from_seq: int | None, branch: bool,
                   overrides: dict[str, Any], allow_tools: list[str], out: Path | None, store_root: Path,
                   output_to_stderr: bool, proxy: bool, controls: ReplayControls) -> ChildLaunch | None:
    """A plain replay (no --from-seq, --set, edits, pdb or --proxy) of a command wop's own Python runs starts it,
    gated, before the replay reads its settings and reads and checks its source capture: the interpreter starts
    meanwhile, and runs nothing of the program's until its go, which tells it what the settings decided (the policy:
    settled_environment). None for any other run, where the manifest cannot say the command, or where the capture is
    not trusted to run it (the replay then reports why). A recorded command the capture is not yet known to be trusted
    for starts so too when it is wop's own Python given no option (starts_plainly): until the go, which the replay
    gives only once trust.require_trusted has passed, it is wop's interpreter running wop's bootstrap, and nothing of
    the capture's (an option such as -X pycache_prefix would act before that)."""
    if branch or from_seq is not None or overrides or proxy or controls.edits or controls.debugging:
        return None
    manifest = manifest_hint(source_dir)
    if manifest is None:
        return None
    program = manifest.get("program") if isinstance(manifest.get("program"), dict) else {}
    recorded = program.get("argv")
    command = argv or (recorded if isinstance(recorded, list) and all(type(word) is str for word in recorded) else [])
    if not command or (program.get("pytest") and not argv) or not starts_own_python(command):
        return None
    if not argv and not (controls.trust or trust_from_environment() or starts_plainly(command)
                         or recorded_command_trust(source_dir, manifest).trusted):
        return None  # the replay refuses it once it has read the capture (trust.require_trusted)
    try:
        launch = ChildLaunch(command, out=out, mode="replay",
                             extra_env=replay_environment(source_dir, 0, False, {}, allow_tools, controls),
                             keep_stderr_tail=True, output_to_stderr=output_to_stderr, quiet=controls.quiet)
    except UsageError:
        return None
    launch.settle(store_root, watches_ambient(manifest))
    launch.start(gated=True)
    return launch
