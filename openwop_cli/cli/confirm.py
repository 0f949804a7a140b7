"""Asking before deleting: a prompt on a terminal, and a refusal without --yes anywhere else."""

import sys

from openwop_cli.errors import UsageError


def confirm_or_refuse(question: str, assume_yes: bool) -> bool:
    """True to go ahead; never waits on a non-interactive stdin (it asks for --yes instead)."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"{question} — refusing without --yes because standard input is not a terminal")
    return _ask(question)


def _ask(question: str) -> bool:
    """`question [y/N]: ` until the answer is yes, no or empty (no), as click's confirm asks (the prompt on stdout but
    its last space, which input() writes); Ctrl-C or end of input ends wop as click's Abort does: "Aborted!" and exit
    1."""
    while True:
        try:
            print(f"{question} [y/N]:", end="", flush=True)
            answer = input(" ").strip().lower()
        except (KeyboardInterrupt, EOFError):
            print("Aborted!", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        if answer in ("y", "yes", "n", "no", ""):
            return answer in ("y", "yes")
        print("Error: invalid input", flush=True)
