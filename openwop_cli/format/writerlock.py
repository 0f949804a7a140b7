"""The writer's lock of a capture: `.wop-lock` in its directory, flock'ed by the process writing it from start to
finalize, so `wop rm` and `wop gc` can tell a capture being written from a finished (or crashed) one.

An flock belongs to the open file, not to the file's name: it ends with the process that held it, so a writer
that crashed leaves a lock file nobody holds, never a capture that can no longer be deleted. Where the platform
has no flock (Windows), nothing is locked and every capture reads as not being written.
"""

import os
from pathlib import Path

LOCK_NAME = ".wop-lock"
_OPEN = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def hold(capture_dir: Path) -> int | None:
    """Create and lock the capture's lock file; its descriptor (release it with release), or None where there is no
    flock (the platform's, or the file system's: some network file systems refuse it; the capture goes on unlocked).
    Another process holding it raises BlockingIOError."""
    try:
        import fcntl
    except ImportError:
        return None
    fd = os.open(capture_dir / LOCK_NAME, _OPEN, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    except OSError:
        release(capture_dir, fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(capture_dir: Path, fd: int | None) -> None:
    """Remove the lock file, then let go of the lock (a process that opened the file before it went finds it
    still held, and says so)."""
    if fd is None:
        return
    try:
        (capture_dir / LOCK_NAME).unlink(missing_ok=True)
    except OSError:
        pass
    os.close(fd)


def being_written(capture_dir: Path) -> bool:
    """True while a live process holds the capture's lock (a lock file left by a crashed writer is not held)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(capture_dir / LOCK_NAME, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # none, or not a file wop made (a link): nobody holds a lock through it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False
