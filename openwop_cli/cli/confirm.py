"""Asking before deleting: a prompt on a terminal, and a refusal without --yes anywhere else."""

import sys

import typer

from openwop_cli.errors import UsageError


def confirm_or_refuse(question: str, assume_yes: bool) -> bool:
    """True to go ahead; never waits on a non-interactive stdin (it asks for --yes instead)."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"{question} — refusing without --yes because standard input is not a terminal")
    return typer.confirm(question, default=False)
