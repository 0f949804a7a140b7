"""Report lines without rich: plain printing of lines made of (text, style) segments for the reports that are only lines when nothing is coloured, and a
print_warning that imports rich only when there is a warning.

Importing rich costs more than a small capture's whole run, so `wop capture` and a clean `wop replay`
print their lines here, exactly as rich would, when the stream is not coloured (not a terminal, or
TTY_COMPATIBLE=0); when it is, rich Text is assembled from the same segments.
"""

import os
from collections.abc import Sequence
from typing import TextIO

Segment = tuple[str, str]  # text and its theme style ("" for none)

def styled(stream: TextIO) -> bool:
    """Whether a rich console on stream would colour what it prints, decided as rich decides (TTY_COMPATIBLE,
    FORCE_COLOR, else whether stream is a terminal)."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if "FORCE_COLOR" in os.environ:
        return os.environ["FORCE_COLOR"] != ""
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def print_plain(stream: TextIO, lines: Sequence[Sequence[Segment]]) -> bool:
    """Print lines of segments to stream as the plain text rich prints of them when it does not colour (soft wrap:
    no line is broken); False, printing nothing, when stream is coloured or a line holds a tab (which rich expands
    by cell widths): then rich prints them."""
    texts = ["".join(text for text, _style in line) for line in lines]
    if styled(stream) or any("\t" in text for text in texts):
        return False
    stream.write("".join(text + "\n" for text in texts))
    stream.flush()
    return True


def print_warning(message: str) -> None:
    """report.console's one yellow line on stderr, rich imported only when there is a warning to print."""
    from openwop_cli.report.console import print_warning as print_with_rich

    print_with_rich(message)
