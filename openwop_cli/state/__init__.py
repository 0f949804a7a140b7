"""State: the canonical channel reducers and the fold of a capture's writes to any seq.

`wop.state` is this package: `wop.state.declare/write/set/get` reach the SDK's channel writes
(openwop_cli.runtime.sdk.state), loaded on first use.
"""

from typing import Any

SDK_NAMES = frozenset({"declare", "write", "set", "get"})


def __getattr__(name: str) -> Any:
    if name in SDK_NAMES:
        from openwop_cli.runtime.sdk import state

        return getattr(state, name)
    raise AttributeError(f"module 'openwop_cli.state' has no attribute {name!r}")
