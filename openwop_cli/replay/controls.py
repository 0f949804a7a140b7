"""What steers a replayed program beyond the policy: counterfactual edits, staying offline in a fork, how a
strict stop's traceback is printed, and stopping in pdb at a divergence or before a seq.

The parent (`wop replay`/`wop fork`) hands them to the replayed program through its environment.
"""

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from openwop_cli.replay.edits import Edit

ENV_EDITS = "WOP_EDITS"
ENV_OFFLINE = "WOP_OFFLINE"
ENV_VERBOSE = "WOP_VERBOSE"
ENV_PDB = "WOP_PDB"
ENV_BREAK_AT = "WOP_BREAK_AT"


class ReplayControls(NamedTuple):
    """edits: served results with values changed (a fork then runs live from the first call that no longer
    matches, or with offline stops there); verbose: keep the whole traceback after a strict stop; pdb: stop
    in the debugger at the first divergence; break_at: stop in the debugger just before seq is served; quiet:
    the program's output is not passed on (one of several replays running side by side); compare_output: the
    program's stdout and stderr are part of the verdict (replay.output), exact_output: compared without
    normalization; trust: run the command the capture recorded even when the capture is not trusted here
    (--trust, trust.py). The last three concern the parent only.

    A named tuple, and edits loaded only when there are some: a replayed process reads its controls before its
    program's first line."""

    edits: "tuple[Edit, ...]" = ()
    offline: bool = False
    verbose: bool = False
    pdb: bool = False
    break_at: int | None = None
    quiet: bool = False
    compare_output: bool = True
    exact_output: bool = False
    trust: bool = False

    @property
    def debugging(self) -> bool:
        """True when the program may stop in pdb (it then needs the terminal for itself)."""
        return self.pdb or self.break_at is not None

    def environment(self) -> dict[str, str]:
        """These controls as environment variables for the replayed program."""
        env: dict[str, str] = {}
        if self.edits:
            env[ENV_EDITS] = json.dumps([edit.to_json() for edit in self.edits])
        for name, on in ((ENV_OFFLINE, self.offline), (ENV_VERBOSE, self.verbose), (ENV_PDB, self.pdb)):
            if on:
                env[name] = "1"
        if self.break_at is not None:
            env[ENV_BREAK_AT] = str(self.break_at)
        return env

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "ReplayControls":
        """The controls `environment()` wrote."""
        env: Mapping[str, Any] = os.environ if environ is None else environ
        edits: tuple[Any, ...] = ()
        if env.get(ENV_EDITS):
            from openwop_cli.replay.edits import Edit

            edits = tuple(Edit.from_json(item) for item in json.loads(env[ENV_EDITS]))
        break_at = env.get(ENV_BREAK_AT)
        return cls(edits, bool(env.get(ENV_OFFLINE)), bool(env.get(ENV_VERBOSE)), bool(env.get(ENV_PDB)),
                   int(break_at) if break_at else None)
