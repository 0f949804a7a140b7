"""Importers: recordings made by other tools (VCR.py cassettes) turned into wop captures."""
