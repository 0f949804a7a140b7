"""Channels: the canonical reducers, the spec's checks, and the fold of a capture's writes to any seq (pure logic).

The program's `wop.state.declare/write/set/get` is runtime.state_api, which reduces with these reducers.
"""
