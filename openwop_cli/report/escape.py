"""What makes text from a capture safe to print: the one place wop escapes terminal output (report.plain and
report.console print only what passed through here)."""

import re

# C0 controls but tab and newline, DEL, C1 controls (CSI among them), zero-width and bidirectional overrides
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_UNSAFE_INLINE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def clean(text: object) -> str:
    """Text from a capture made safe for a terminal: ESC, BEL, CR, C1 and bidirectional controls become
    visible escapes such as \\x1b (newline and tab stay), so recorded data can never move the cursor, clear
    the screen, set the window title or reorder what is shown."""
    text = str(text)
    return _UNSAFE.sub(_escaped, text) if _UNSAFE.search(text) else text


def clean_inline(text: object) -> str:
    """`clean`, and newline and tab shown as escapes too: text that must stay on its one line (a timeline row)."""
    text = str(text)
    return _UNSAFE_INLINE.sub(_escaped, text) if _UNSAFE_INLINE.search(text) else text


def _escaped(match: re.Match[str]) -> str:
    return ascii(match.group())[1:-1]
