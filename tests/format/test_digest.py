"""BackgroundHash: the sha256 hashlib gives for the same chunks, whatever their sizes and however they are handed
(many at once, none, after the digest was read), and in a forked child that has no hashing thread. Each test first
hands INLINE_BYTES, hashed on the caller's thread, so that what follows goes to the hashing thread."""

import hashlib
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_cli.format.digest import INLINE_BYTES, BackgroundHash
from tests.conftest import under_a_limit

PAST_INLINE = b"i" * INLINE_BYTES


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=5000), max_size=40), st.integers(0, 40), st.booleans())
def test_the_digest_is_hashlibs_for_the_same_chunks(chunks, read_after, threaded):
    chunks = [PAST_INLINE, *chunks] if threaded else chunks
    hashed = BackgroundHash()
    for index, chunk in enumerate(chunks):
        if index == read_after:
            assert hashed.hexdigest() == hashlib.sha256(b"".join(chunks[:index])).hexdigest()
        hashed.update(chunk)
    assert hashed.hexdigest() == hashlib.sha256(b"".join(chunks)).hexdigest()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_forked_child_hashes_what_was_handed_before_and_after_the_fork():
    """Forked while the thread hashes a big chunk: the child neither hangs nor loses the chunk."""
    hashed = BackgroundHash()
    hashed.update(PAST_INLINE)
    hashed.update(b"before " * 100_000)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child: no hashing thread; what waits, and what comes, is hashed here
        try:
            hashed.update(b"after")
            os.write(writer, hashed.hexdigest().encode())
        finally:
            os._exit(0)
    os.close(writer)
    answered, _, _ = select.select([reader], [], [], 60)
    if not answered:  # the child hangs (a hash lock taken for good): end it, and fail
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    assert answered, "the forked child hung on its hash"
    digest = os.read(reader, 64).decode()
    assert digest == hashlib.sha256(PAST_INLINE + b"before " * 100_000 + b"after").hexdigest()
    assert hashed.hexdigest() == hashlib.sha256(PAST_INLINE + b"before " * 100_000).hexdigest()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_the_digest_is_right_while_another_thread_forks_again_and_again():
    """Two threads of a program fork (multiprocessing) while another appends events: each fork ends the hashing
    thread and the next chunk starts another. No chunk is lost or hashed twice, and the fork hooks never fail."""
    failed_hooks = []
    before, sys.unraisablehook = sys.unraisablehook, failed_hooks.append
    try:
        for _ in range(30):
            hashed, stop = BackgroundHash(), threading.Event()
            chunks = [PAST_INLINE, *(os.urandom(64) for _ in range(300))]

            def fork_until_stopped():
                while not stop.is_set():
                    child = os.fork()
                    if child == 0:
                        os._exit(0)
                    os.waitpid(child, 0)

            forkers = [threading.Thread(target=fork_until_stopped) for _ in range(2)]
            for forker in forkers:
                forker.start()
            try:
                for chunk in chunks:
                    hashed.update(chunk)
                digest = hashed.hexdigest()
            finally:
                stop.set()
                for forker in forkers:
                    forker.join()
            assert digest == hashlib.sha256(b"".join(chunks)).hexdigest()
    finally:
        sys.unraisablehook = before
    assert failed_hooks == []


WITHOUT_THREADS = """
    import hashlib
    import resource

    from openwop_cli.format.digest import INLINE_BYTES, BackgroundHash

    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))  # `ulimit -u` reached: no thread can start
    chunks = [b"i" * INLINE_BYTES, b"a" * 1000, b"b" * 2000]
    hashed = BackgroundHash()
    for chunk in chunks:
        hashed.update(chunk)
    print(hashed.hexdigest() == hashlib.sha256(b"".join(chunks)).hexdigest())
"""


def test_with_no_thread_to_be_had_the_chunks_are_hashed_on_the_callers_thread(tmp_path):
    """A process that may start no thread (`ulimit -u`) gets the digest all the same: every big capture's reader
    hashes through BackgroundHash."""
    program = tmp_path / "without_threads.py"
    program.write_text(textwrap.dedent(WITHOUT_THREADS))
    done = subprocess.run(under_a_limit(program), capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout == b"True\n", done.stderr.decode()


def test_the_reader_waits_for_a_lagging_thread_rather_than_hold_every_chunk(monkeypatch):
    """At most MAX_WAITING chunks wait for the hashing thread (memory stays flat when it lags), and a thread that
    finds only the end waiting ends cleanly."""
    from openwop_cli.format import digest

    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    hashed = BackgroundHash()
    hashed.update(PAST_INLINE)
    chunks = [bytes([index]) * 4096 for index in range(digest.MAX_WAITING * 4)]
    for chunk in chunks:
        hashed.update(chunk)
        assert hashed._chunks.qsize() <= digest.MAX_WAITING
    while not hashed._chunks.empty():
        threading.Event().wait(0.001)
    assert hashed.hexdigest() == hashlib.sha256(PAST_INLINE + b"".join(chunks)).hexdigest()
    assert failures == []
