"""The Typer command line: one thin module per command over the layers below."""
