"""Tables that fit the terminal without cutting what names a row: the last column (a command, a path) is
shortened in the middle, keeping its head and its tail, or moves to a line of its own under the row; and the
shorteners that keep a command's script and a path's last directory readable.

A table printed for a reader that is not a terminal (width None) is never shortened or wrapped: one line a row.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console
from rich.text import Text

GAP = "  "
MIN_LAST_COLUMN = 24  # fewer cells than this left for the last column: it moves to its own line
MIN_WRAPPED_COLUMN = 12
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Layout:
    """How a table's columns give way on a narrow terminal."""

    headers: Sequence[str]
    shorten: Callable[[str, int], str]  # the last column's text in at most that many cells
    right: frozenset[int] = frozenset()  # right-aligned columns
    moved: int = 1  # how many of the last columns go to a second line when the row does not fit on one
    under: int = 0  # the second line starts under this column...
    indent: int = 0  # ...and this many cells further in
    wrapped: int = 0  # the column that wraps (never cut) when even the first line is too wide


@dataclass(frozen=True, slots=True)
class Row:
    """One row: its cells (the last one plain text, shortened to fit) and a note printed on its own line."""

    cells: Sequence[Text]
    last: str
    note: Text | None = None


def print_fitted(console: Console, layout: Layout, rows: Sequence[Row], width: int | None) -> None:
    """Print rows as aligned columns in width cells (None: no limit, one line a row, nothing shortened)."""
    widths = [max([cell_len(header)] + [_cell(row, column).cell_len for row in rows])
              for column, header in enumerate(layout.headers)]
    count = len(widths)
    room = None if width is None else width - sum(widths[:-1]) - len(GAP) * (count - 1)
    if room is None or room >= min(widths[-1], MIN_LAST_COLUMN):
        widths[-1] = widths[-1] if room is None else min(widths[-1], room)
        _print_line(console, layout, [Text(header, "table.header") for header in layout.headers], widths)
        for row in rows:
            _print_line(console, layout, [*row.cells, Text(layout.shorten(row.last, widths[-1]))], widths)
            _print_note(console, row, 2, width)
        return
    top = count - layout.moved
    top_widths = widths[:top]
    spare = width - _span(top_widths)
    if spare < 0:
        top_widths[layout.wrapped] = max(MIN_WRAPPED_COLUMN, top_widths[layout.wrapped] + spare)
    indent = _span(top_widths[:layout.under]) + (len(GAP) if layout.under else 0) + layout.indent
    moved_widths = widths[top:]
    moved_widths[-1] = max(1, width - indent - _span(moved_widths[:-1]) - (len(GAP) if len(moved_widths) > 1 else 0))
    _print_line(console, layout, [Text(header, "table.header") for header in layout.headers[:top]], top_widths)
    for row in rows:
        _print_line(console, layout, list(row.cells[:top]), top_widths)
        moved = [*row.cells[top:], Text(layout.shorten(row.last, moved_widths[-1]))]
        second = Text(" " * indent) + _joined(moved, moved_widths, layout, top)
        second.stylize("muted")
        console.print(second, soft_wrap=True)
        _print_note(console, row, indent or 2, width)


def shortened_command(command: str, width: int) -> str:
    """command in at most width cells: whole when it fits, else its words up to the script (the word after
    `-m`, the first `.py`, or the program) and as many of the following and last words as fit, `…` for the rest."""
    words = command.split(" ")
    script = next((index for index, word in enumerate(words) if index and words[index - 1] == "-m"),
                  next((index for index, word in enumerate(words) if word.endswith(".py")), 0))
    core = list(range(script + 1))
    order = [len(words) - 1, *range(script + 1, len(words) - 1)]
    return _elided(command, words, " ", core, order, width)


def shortened_path(path: str, width: int) -> str:
    """path in at most width cells: whole when it fits, else its last part (the capture's directory), its first,
    and as many parents of the last as fit, `…` for the rest."""
    parts = path.split("/")
    last = len(parts) - 1
    return _elided(path, parts, "/", [last], [0, *range(last - 1, 0, -1)], width)


def _elided(text: str, parts: list[str], separator: str, core: list[int], order: list[int], width: int) -> str:
    """The parts at the core indices and those of order that fit, a `…` part where any are left out; with the
    paths among the parts kept as `…/` and their last name when that keeps more parts; else text cut in the middle."""
    if cell_len(text) <= width:
        return text
    compressed = [f"{ELLIPSIS}/{part.rstrip('/').rsplit('/', 1)[1]}" if "/" in part.rstrip("/") else part
                  for part in parts]
    best: tuple[int, str] | None = None
    for candidate in (parts, compressed):
        kept = set(core)
        if cell_len(_joined_parts(candidate, kept, separator)) > width:
            continue
        for index in order:
            if index in kept:
                continue
            if cell_len(_joined_parts(candidate, kept | {index}, separator)) > width:
                if index != order[0]:
                    break
                continue
            kept.add(index)
        if best is None or len(kept) > best[0]:
            best = (len(kept), _joined_parts(candidate, kept, separator))
    if best is not None:
        return best[1]
    return _cut_in_the_middle(text, width)


def _joined_parts(parts: list[str], kept: set[int], separator: str) -> str:
    pieces, previous = [], -1
    for index in sorted(kept):
        if index > previous + 1:
            pieces.append(ELLIPSIS)
        pieces.append(parts[index])
        previous = index
    if previous < len(parts) - 1:
        pieces.append(ELLIPSIS)
    return separator.join(pieces)


def _cut_in_the_middle(text: str, width: int) -> str:
    """text's head and tail around `…` in width cells: the last resort, for one word wider than the column."""
    if width < 2:
        return ELLIPSIS[:width]
    head = _fitting(text, (width - 1 + 1) // 2)
    tail = _fitting(text[::-1], width - 1 - cell_len(head))[::-1]
    return head + ELLIPSIS + tail


def _fitting(text: str, cells: int) -> str:
    taken, used = [], 0
    for character in text:
        used += get_character_cell_size(character)
        if used > cells:
            break
        taken.append(character)
    return "".join(taken)


def _cell(row: Row, column: int) -> Text:
    return row.cells[column] if column < len(row.cells) else Text(row.last)


def _span(widths: Sequence[int]) -> int:
    return sum(widths) + len(GAP) * max(0, len(widths) - 1)


def _joined(cells: Sequence[Text], widths: Sequence[int], layout: Layout, first_column: int) -> Text:
    line = Text()
    for offset, (cell, cell_width) in enumerate(zip(cells, widths)):
        if offset:
            line.append(GAP)
        padding = " " * (cell_width - cell.cell_len)
        line.append_text(Text(padding) + cell if first_column + offset in layout.right else cell + Text(padding))
    line.rstrip()
    return line


def _print_line(console: Console, layout: Layout, cells: list[Text], widths: Sequence[int]) -> None:
    """One row on one line, or, when the wrapped column's cell is wider than its column, on as many as it needs."""
    column = layout.wrapped
    pieces = [cells[column]] if cells[column].cell_len <= widths[column] else _wrapped(cells[column], widths[column])
    for number, piece in enumerate(pieces):
        shown = [piece if index == column else (cell if number == 0 else Text()) for index, cell in enumerate(cells)]
        console.print(_joined(shown, widths, layout, 0), soft_wrap=True)


def _wrapped(cell: Text, width: int) -> list[Text]:
    """cell's text on lines of at most width cells, broken after a space, `-`, `_`, `.` or `/` where it can be."""
    lines = [""]
    for word in re.findall(r"[^ ._/-]*[ ._/-]?", cell.plain):
        while word:
            if cell_len(lines[-1] + word) <= width:
                lines[-1] += word
                word = ""
            elif lines[-1]:
                lines.append("")
            else:
                piece = _fitting(word, width)
                lines[-1], word = piece, word[len(piece):]
                lines.append("")
    return [Text(line.rstrip(" "), style=cell.style) for line in lines if line]


def _print_note(console: Console, row: Row, indent: int, width: int | None) -> None:
    if row.note is not None:
        console.print(Text(" " * indent) + row.note, soft_wrap=width is None)
