"""The program's stdout and stderr: passed through as they come, and kept for the capture (`wop capture --no-output`
keeps nothing and leaves them alone).

Each stream the program writes reaches wop through a pipe — or, when wop's own stream is a terminal, a pseudo-terminal
of the same size, so the program still sees a terminal (colours, line buffering) — and one thread copies both to where
they would have gone, in the order they come, keeping up to MAX_KEPT_BYTES of each. What is kept goes into the
manifest's `output` (past the blob threshold, into a blob), redacted as everything else the capture holds; under the
strict profile only its size is kept. A replay compares the two (replay.output).

Once the capture is open (`keep_into`), what is kept is redacted and stored while the program runs (format.output
.KeptStream), on wop's side of the pipe: the program's end pays only for the pipe. A stream that keeps writing is read
every BATCH_SECONDS rather than line by line, so an unbuffered program (PYTHONUNBUFFERED, `python -u`) does not wake
wop for every write.
"""

import os
import selectors
import sys
import threading
import time
from collections import deque
from typing import Any, BinaryIO

MAX_KEPT_BYTES = 32 * 1024 * 1024  # of each stream; past it the rest is passed through, not kept
TAIL_LINES = 12  # the last stderr lines a replay report shows of a crash
BATCH_SECONDS = 0.002  # a pipe written to without pause is read this often (the first write after a pause at once)
PIPE_BYTES = 1 << 20  # what a pipe holds (where the system lets us) while the copier waits out BATCH_SECONDS
READ_BYTES = PIPE_BYTES  # a whole pipe at once: a program writing fast never finds it full
STREAMS = ("stdout", "stderr")


class ProgramOutput:
    """Where the program's stdout and stderr go (echo targets: a binary file, or None for nowhere), and what was kept.

    `child_streams()` gives Popen its stdout and stderr; once the child runs, `start()` copies them until both close;
    `join()` waits for that (briefly: a process the program left running may hold them open)."""

    def __init__(self, stdout_to: BinaryIO | None, stderr_to: BinaryIO | None, *, keep: bool) -> None:
        self.keep = keep
        self.kept: dict[str, list[tuple[bool, bytearray]]] = {name: [] for name in STREAMS}  # until keep_into
        self._keepers: dict[str, Any] = {}  # stream → format.output.KeptStream, from keep_into on
        self._keeping = threading.Lock()
        self.truncated = {name: False for name in STREAMS}
        self._kept_bytes = {name: 0 for name in STREAMS}
        self._marked = {name: _MarkedStream() for name in STREAMS}
        self.sizes = {name: 0 for name in STREAMS}
        self._targets = {"stdout": stdout_to, "stderr": stderr_to}
        self._tail: deque[bytes] = deque(maxlen=TAIL_LINES + 1)
        self._pending_tail = b""
        self._ends: dict[str, tuple[int, int]] = {}  # stream → (our end, the child's end)
        self._thread: threading.Thread | None = None
        self._batched = True  # every stream is a pipe (a terminal is read as it comes)
        self.keep_failure: str | None = None

    def child_streams(self) -> tuple[int, int]:
        """The file descriptors the child writes its stdout and stderr to (closed here once it started)."""
        for name in STREAMS:
            terminal = _terminal_like(self._targets[name])
            self._batched = self._batched and terminal is None
            self._ends[name] = terminal or _roomy_pipe()
        return self._ends["stdout"][1], self._ends["stderr"][1]

    def marks_environment(self) -> dict[str, str]:
        """What tells the program's processes to mark the output of recorded calls (runtime.outputmarks): the
        identity of the pipes they write to (call before `start`)."""
        if not self.keep:
            return {}
        from openwop_cli.runtime.outputmarks import ENV_OUTPUT_MARKS, pipe_identity

        return {ENV_OUTPUT_MARKS: ",".join(pipe_identity(self._ends[name][1]) for name in STREAMS)}

    def start(self) -> None:
        """Start copying (the child holds its ends now)."""
        for _ours, theirs in self._ends.values():
            os.close(theirs)
        self._thread = threading.Thread(target=self._copy, name="wop-output", daemon=True)
        self._thread.start()

    def abandon(self) -> None:
        """The child never started: close every end."""
        for ours, theirs in self._ends.values():
            for descriptor in (ours, theirs):
                try:
                    os.close(descriptor)
                except OSError:
                    pass

    def join(self, seconds: float) -> None:
        """Wait until both streams are closed and copied, or seconds have passed."""
        if self._thread is not None:
            self._thread.join(seconds)

    def keep_into(self, blobs: Any, redactor: Any) -> None:
        """Redact and store what is kept from now on as it comes (the capture is open: its blobs and redactor)."""
        if not self.keep:
            return
        from openwop_cli.format.output import KeptStream

        with self._keeping:
            for name in STREAMS:
                keeper = self._keepers[name] = KeptStream(blobs, redactor)
                for in_call, data in self.kept[name]:
                    self._keep(name, keeper, in_call, bytes(data))
                self.kept[name] = []

    def records(self, blobs: Any, redactor: Any) -> dict[str, Any] | None:
        """The manifest's output (format.output) once both streams are copied; None when nothing was kept."""
        if not self.keep:
            return None
        if not self._keepers:
            self.keep_into(blobs, redactor)
        with self._keeping:
            if self.keep_failure is not None:
                return None
            return {name: keeper.record(self.sizes[name], self.truncated[name])
                    for name, keeper in self._keepers.items()}

    def tail_lines(self) -> list[str]:
        """The last non-empty lines the program wrote to stderr, decoded."""
        lines = [line.decode("utf-8", errors="replace").rstrip() for line in (*self._tail, self._pending_tail)]
        return [line for line in lines if line.strip()][-TAIL_LINES:]

    def _copy(self) -> None:
        selector = selectors.DefaultSelector()
        for name, (ours, _) in self._ends.items():
            selector.register(ours, selectors.EVENT_READ, name)
        open_streams = len(self._ends)
        try:
            while open_streams:
                read = False
                for key, _ in selector.select():
                    chunk = _read(key.fd)
                    for in_call, piece in self._marked[key.data].feed(chunk, end=not chunk):
                        self._take(key.data, piece, in_call)
                    read = read or bool(chunk)
                    if not chunk:
                        selector.unregister(key.fd)
                        os.close(key.fd)
                        open_streams -= 1
                if read and self._batched:
                    time.sleep(BATCH_SECONDS)
        finally:
            selector.close()

    def _take(self, name: str, chunk: bytes, in_call: bool) -> None:
        if not chunk:
            return
        target = self._targets[name]
        if target is not None:
            try:
                target.write(chunk)
                target.flush()
            except Exception:  # our own stream failed (closed, full): stop echoing, keep draining and recording
                self._targets[name] = None
        self.sizes[name] += len(chunk)
        if self.keep:
            room = MAX_KEPT_BYTES - self._kept_bytes[name]
            if room < len(chunk):
                self.truncated[name] = True
            if room > 0:
                self._kept_bytes[name] += min(room, len(chunk))
                with self._keeping:
                    keeper = self._keepers.get(name)
                    if keeper is not None:
                        self._keep(name, keeper, in_call, chunk[:room])
                    else:
                        segments = self.kept[name]
                        if not segments or segments[-1][0] != in_call:
                            segments.append((in_call, bytearray()))
                        segments[-1][1].extend(chunk[:room])
        if name == "stderr":
            lines = (self._pending_tail + chunk).split(b"\n")
            self._pending_tail = lines.pop()[-4096:]
            self._tail.extend(lines[-TAIL_LINES - 1:])

    def _keep(self, name: str, keeper: Any, in_call: bool, data: bytes) -> None:
        """Hand data to the stream's keeper; a keeper that fails (a full disk) is dropped, the copying goes on."""
        if self.keep_failure is not None:
            return
        try:
            keeper.add(in_call, data)
        except Exception as exc:  # never stop copying: the program would block on a full pipe
            self.keep_failure = f"{name}: {exc}"
            for each in self._keepers.values():
                each.discard()


class _MarkedStream:
    """Splits a stream at the marks the program writes around recorded calls' bodies (runtime.outputmarks) into
    (inside a call, bytes) pieces, the marks taken out; a mark cut between two reads is held until the next."""

    def __init__(self) -> None:
        self.in_call = False
        self._held = b""

    def feed(self, chunk: bytes, end: bool = False) -> list[tuple[bool, bytes]]:
        from openwop_cli.runtime.outputmarks import BEGIN, END, MARK_PREFIX

        data, self._held = self._held + chunk, b""
        if MARK_PREFIX[:1] not in data:  # memchr: no mark, nor the start of one (the usual case)
            return [(self.in_call, data)]
        pieces: list[tuple[bool, bytes]] = []
        while True:
            at = data.find(MARK_PREFIX)
            if at < 0:
                break
            mark = data[at:at + len(BEGIN)]
            if len(mark) < len(BEGIN) and not end:  # cut: the rest comes with the next read
                pieces.append((self.in_call, data[:at]))
                self._held = data[at:]
                return pieces
            if mark not in (BEGIN, END):  # the program's own bytes that look like a mark's start
                pieces.append((self.in_call, data[:at + 1]))
                data = data[at + 1:]
                continue
            pieces.append((self.in_call, data[:at]))
            self.in_call = mark == BEGIN
            data = data[at + len(BEGIN):]
        keep = 0 if end else _partial_prefix(data, MARK_PREFIX)
        if keep:
            self._held = data[-keep:]
            data = data[:-keep]
        pieces.append((self.in_call, data))
        return pieces


def _partial_prefix(data: bytes, prefix: bytes) -> int:
    """How many bytes at data's end begin prefix (0 when none)."""
    for size in range(min(len(prefix) - 1, len(data)), 0, -1):
        if data.endswith(prefix[:size]):
            return size
    return 0


def _read(descriptor: int) -> bytes:
    """Up to READ_BYTES from a pipe or terminal end; b"" at its end (a pseudo-terminal's end is EIO)."""
    try:
        return os.read(descriptor, READ_BYTES)
    except OSError:
        return b""


def _roomy_pipe() -> tuple[int, int]:
    """A pipe (our end, the child's) holding PIPE_BYTES where the system allows it (Linux), else its default."""
    ours, theirs = os.pipe()
    try:
        import fcntl

        if hasattr(fcntl, "F_SETPIPE_SZ"):
            fcntl.fcntl(theirs, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, ImportError):
        pass
    return ours, theirs


def _terminal_like(target: Any) -> tuple[int, int] | None:
    """A pseudo-terminal (our end, the child's) of the terminal target writes to, when it is one; else None."""
    try:
        if target is None or not os.isatty(target.fileno()):
            return None
        import pty
        import termios

        ours, theirs = pty.openpty()
        attributes = termios.tcgetattr(theirs)
        attributes[1] &= ~termios.OPOST  # bytes as the program wrote them: no "\n" → "\r\n" on the way
        termios.tcsetattr(theirs, termios.TCSANOW, attributes)
        _copy_window_size(target.fileno(), theirs)
        return ours, theirs
    except (OSError, ValueError, ImportError, AttributeError):
        return None


def _copy_window_size(source: int, destination: int) -> None:
    try:
        import fcntl
        import termios

        fcntl.ioctl(destination, termios.TIOCSWINSZ, fcntl.ioctl(source, termios.TIOCGWINSZ, b"\0" * 8))
    except (OSError, ImportError):
        pass


def echo_target(stream: Any) -> BinaryIO | None:
    """The binary stream under one of ours (sys.stdout, sys.stderr), or None when there is none."""
    return getattr(stream, "buffer", None) if stream is not None else None


def default_targets(quiet: bool, output_to_stderr: bool) -> tuple[BinaryIO | None, BinaryIO | None]:
    """Where the program's stdout and stderr are echoed: ours, stdout to our stderr (a --json report owns our stdout),
    or nowhere (quiet: runs made side by side)."""
    if quiet:
        return None, None
    return echo_target(sys.stderr if output_to_stderr else sys.stdout), echo_target(sys.stderr)
