"""What makes text from a capture safe to print: the one place wop escapes terminal output (report.plain and
report.console print only what passed through here)."""

import functools
import re

# C0 controls but tab and newline, DEL, C1 controls (CSI among them), zero-width and bidirectional overrides: none of
# them printable (str.isprintable), so printable text has none of them and needs no pattern.
_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]"
_UNSAFE_INLINE = "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]"


def clean(text: object) -> str:
    """Text from a capture made safe for a terminal: ESC, BEL, CR, C1 and bidirectional controls become
    visible escapes such as \\x1b (newline and tab stay), so recorded data can never move the cursor, clear
    the screen, set the window title or reorder what is shown."""
    text = str(text)
    if text.isprintable():
        return text
    unsafe = _pattern(_UNSAFE)
    return unsafe.sub(_escaped, text) if unsafe.search(text) else text


def clean_inline(text: object) -> str:
    """`clean`, and newline and tab shown as escapes too: text that must stay on its one line (a timeline row)."""
    text = str(text)
    if text.isprintable():
        return text
    unsafe = _pattern(_UNSAFE_INLINE)
    return unsafe.sub(_escaped, text) if unsafe.search(text) else text


@functools.cache
def _pattern(characters: str) -> re.Pattern[str]:
    """A character class compiled on first need: compiling one of these costs 0.5 ms, and `wop capture`'s closing
    line, printable text, never needs it."""
    return re.compile(characters)


def _escaped(match: re.Match[str]) -> str:
    return ascii(match.group())[1:-1]
