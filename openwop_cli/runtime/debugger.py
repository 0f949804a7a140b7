"""`wop replay --pdb` and `--break-at SEQ`: stop the replayed program in pdb, in the frame of the call site.

At the first divergence (--pdb), or just before the recorded unit at SEQ is handed back (--break-at),
the thread that made the call enters pdb with the program's own frame current — its locals, `up`,
`down` and `where` work as at a breakpoint — after a few lines saying why it stopped. Continuing
lets the replay go on (a strict stop then proceeds). Other threads run on until they next need the
replay.
"""

import sys
import threading
from typing import Any

from openwop_cli.runtime.callsite import PROGRAM, place

MAX_VALUE_CHARS = 400


class ReplayDebugger:
    """See the module docstring. One per replayed process."""

    def __init__(self, on_divergence: bool, break_at: int | None) -> None:
        self.on_divergence = on_divergence
        self.break_at = break_at
        self._lock = threading.Lock()
        self._stopped_at_divergence = False

    def diverged(self, divergence: Any) -> None:
        """A divergence was found in this thread's call: stop at the first one (only once per process)."""
        if not self.on_divergence:
            return
        with self._lock:
            if self._stopped_at_divergence:
                return
            self._stopped_at_divergence = True
        where = f" at seq {divergence.event_seq}" if divergence.event_seq is not None else ""
        lines = [f"wop: replay diverged{where}: {divergence.code}"]
        if divergence.json_path:
            lines.append(f"  at {divergence.json_path}")
        lines.append(f"  {divergence.detail}")
        expected, observed = divergence.sides()
        if expected is not None or observed is not None:
            lines.append(f"  expected (capture): {_short(expected)}")
            lines.append(f"  observed (today):   {_short(observed)}")
        lines.append("  `c` continues (the replay's stop proceeds); `where`, `up`, `p NAME` look around")
        self._stop("\n".join(lines))

    def served(self, request_seq: int | None, result_seq: int | None, value: Any) -> None:
        """The recorded unit at request_seq (its result at result_seq) is about to be handed back."""
        if self.break_at is None or self.break_at not in (request_seq, result_seq):
            return
        span = f"seq {request_seq}" + (f"–{result_seq}" if result_seq not in (None, request_seq) else "")
        self._stop(f"wop: --break-at {self.break_at}: about to hand back the recorded {span}\n"
                   f"  served: {_short(value)}\n  `c` continues the replay; `where`, `up`, `p NAME` look around")

    def _stop(self, banner: str) -> None:
        import pdb

        frame = program_frame()
        print(banner, file=sys.stdout, flush=True)
        if frame is None:
            print("wop: no frame of the program's own code is on this stack; not stopping", flush=True)
            return
        debugger = pdb.Pdb()
        debugger.reset()
        debugger.interaction(frame, None)


def program_frame() -> Any:
    """The innermost frame of the program's own code on this thread's stack (not the stdlib, packages or wop)."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        if place(frame.f_code.co_filename)[0] == PROGRAM:
            return frame
        frame = frame.f_back
    return None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS - 1] + "…"
