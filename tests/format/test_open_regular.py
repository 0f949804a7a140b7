"""open_regular under a Ctrl-C: the KeyboardInterrupt reaches the caller (wop then ends with 130), never an
"internal error" about the descriptor, and no descriptor is left open."""

import os

import pytest

from openwop_cli.format.files import open_regular


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
@pytest.mark.parametrize("made", [False, True], ids=["before-the-file-object", "as-it-returns"])
def test_a_ctrl_c_inside_fdopen_is_a_keyboard_interrupt_with_no_descriptor_left(tmp_path, monkeypatch, made):
    """A Ctrl-C sweep of `wop replay NAME` ended twice in 300 runs in "internal error: OSError: [Errno 9]" (exit 70):
    the interrupt came as os.fdopen returned, its file object closed the descriptor as it was dropped, and
    open_regular closed it again. Here os.fdopen is interrupted at that moment, and before it made the object."""
    path = tmp_path / "manifest.json"
    path.write_bytes(b"{}")
    real_fdopen = os.fdopen

    def interrupted_fdopen(fd, *args, **kwargs):
        if made:
            real_fdopen(fd, *args, **kwargs).close()  # the object made and dropped, as the interrupt unwinds it
        raise KeyboardInterrupt

    before = open_descriptors()
    monkeypatch.setattr(os, "fdopen", interrupted_fdopen)
    with pytest.raises(KeyboardInterrupt):
        open_regular(path)
    monkeypatch.undo()
    assert open_descriptors() == before
