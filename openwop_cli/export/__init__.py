"""Exports: captures sent to other tools (OpenTelemetry backends such as Arize Phoenix)."""
