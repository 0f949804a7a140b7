"""Replay: serve a recorded run back to today's code and report where it behaves differently."""
