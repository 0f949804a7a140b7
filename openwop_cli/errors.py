"""One error hierarchy for wop: every error carries the exit code the CLI turns it into.

Exit codes, everywhere: 0 ok, 1 divergence or difference, 2 usage or bad input,
3 corrupt, incomplete or incompatible capture.
"""

EXIT_OK = 0
EXIT_DIFFERENT = 1
EXIT_USAGE = 2
EXIT_BAD_CAPTURE = 3


class WopError(Exception):
    """Base of every error wop reports to a user: a message they can act on and an exit code."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(WopError):
    """A flag, argument or input file the user gave cannot be used."""

    exit_code = EXIT_USAGE


class CaptureNotFound(UsageError):
    """A CAPTURE reference matches nothing (no path, id, prefix or name)."""


class AmbiguousReference(UsageError):
    """A CAPTURE prefix matches more than one capture."""


class NotACapture(UsageError):
    """A path exists but is not a capture directory."""


class BadCassette(UsageError):
    """A VCR.py cassette that cannot be imported (unreadable, not a cassette, a field of the wrong type)."""


class BadTrace(UsageError):
    """An OpenTelemetry trace that cannot be imported (unreadable, not OTLP, a field of the wrong type, too big)."""


class ExportError(UsageError):
    """An export could not be delivered (the endpoint is unreachable or refused it)."""


class SigningKeyError(UsageError):
    """This user's signing key (format.signature) cannot be read or made."""


class UntrustedCommand(UsageError):
    """A replay or fork would run a command taken from a capture that is not trusted here (trust.py)."""

    def __init__(self, message: str, command: list[str], reason: str) -> None:
        super().__init__(message)
        self.command = command
        self.reason = reason


class CaptureError(WopError):
    """The capture itself is corrupt, incomplete or written by an incompatible wop."""

    exit_code = EXIT_BAD_CAPTURE


class CorruptCapture(CaptureError):
    """Bytes on disk do not match what the capture says about itself."""


class IncompleteCapture(CaptureError):
    """The run never finalized its manifest (killed, crashed)."""


class IncompatibleCapture(CaptureError):
    """The capture was written in a format version this wop cannot read."""


class UnsafeBlobReference(CorruptCapture):
    """A blob reference is not a well-formed sha256 name; it is never turned into a path."""
