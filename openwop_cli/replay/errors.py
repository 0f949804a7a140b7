"""What a program sees of a replay: the error raised when today's run parts ways with the capture.

The replay logic itself lives in openwop_cli.replay; during `wop replay` it is attached to the
session as `session.replayer`, and every SDK boundary hands its call to it.
"""

from typing import Any


class ReplayDivergenceError(Exception):
    """Today's run did something the capture does not have (strict replay stops here).

    `divergence` carries the code, the recorded seq, the JSON path, expected and observed values.
    """

    def __init__(self, divergence: Any, *, after_stop: bool = False) -> None:
        self.divergence = divergence
        where = f" at seq {divergence.event_seq}" if divergence.event_seq is not None else ""
        path = f" {divergence.json_path}" if divergence.json_path else ""
        prefix = "replay already stopped: " if after_stop else ""
        super().__init__(f"{prefix}{divergence.code}{where}{path}: {divergence.detail}")

    def __reduce__(self) -> tuple:
        """Raised in a multiprocessing worker, the error reaches the parent process as its message (a pool whose
        result thread cannot unpickle an error hangs)."""
        return _rebuilt, (str(self),)


def _rebuilt(message: str) -> ReplayDivergenceError:
    error = ReplayDivergenceError.__new__(ReplayDivergenceError)
    Exception.__init__(error, message)
    error.divergence = None
    return error


class ServedAnswer(dict):
    """A recorded answer's event data as a replay serves an HTTP exchange, with how long the recorded call lasted
    (`lasted`, seconds from its request to its answer) where an adapter needs it: a stream the program stopped reading
    (adapters.exchange.stream_wait)."""

    lasted = 0.0


class ReplayedToolError(Exception):
    """A tool failed in the capture with an exception type this program cannot rebuild; its message is kept."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.error = error
        super().__init__(f"{error.get('type', 'Error')}: {error.get('message', '')}")
