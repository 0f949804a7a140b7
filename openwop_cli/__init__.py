"""wop: capture, replay and diff LLM agent runs and workflow programs."""

from openwop_cli._version import __version__

__all__ = ["__version__"]
