"""wop: capture, replay and diff LLM agent runs and workflow programs.

The SDK is used as `import openwop_cli as wop`: `wop.tool`, `wop.llm_call`, `wop.now`, `wop.time`,
`wop.random`, `wop.randint`, `wop.uuid4`, `wop.nondeterministic`, `wop.version`, `wop.state`,
`wop.workflow`, `wop.capture`, and the errors a program may catch: `wop.ReplayDivergenceError`,
`wop.ChannelError`. It loads on first use, so `import openwop_cli` (and the CLI) stay cheap.
"""

from typing import Any

from openwop_cli._version import __version__

SDK_NAMES = frozenset(
    {"tool", "llm_call", "now", "time", "random", "randint", "uuid4", "nondeterministic", "version", "state", "capture",
     "workflow", "ChannelError"}
)

__all__ = ["__version__", "ReplayDivergenceError", *sorted(SDK_NAMES)]


def __getattr__(name: str) -> Any:
    if name == "ReplayDivergenceError":
        from openwop_cli.replay.errors import ReplayDivergenceError

        return ReplayDivergenceError
    if name not in SDK_NAMES:
        raise AttributeError(f"module 'openwop_cli' has no attribute {name!r}")
    from openwop_cli.runtime import inprocess_capture  # also how WOP_MODE=capture with no `wop` parent records

    if name in ("state", "ChannelError", "workflow"):
        from openwop_cli.runtime import state_api as module
    elif name == "capture":
        module = inprocess_capture
    else:
        from openwop_cli.runtime import sdk as module
    value = getattr(module, name)
    globals()[name] = value
    return value
