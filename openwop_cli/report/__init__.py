"""Rendering only: rich console output and, later, the HTML report. No logic of its own."""
