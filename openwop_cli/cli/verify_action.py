"""What `wop verify` does once its options are parsed: check a capture's integrity, print what is wrong.

Kept free of Typer so the entry point's fast path (cli.entry) can run it without building the app.
"""


def verify(*, capture: str, json_output: bool) -> int:
    """Verify the capture and print the result; returns 0 when it is intact, else 3."""
    from openwop_cli.errors import EXIT_BAD_CAPTURE
    from openwop_cli.format.verify import verify_capture
    from openwop_cli.store import resolve_capture

    report = verify_capture(resolve_capture(capture))
    if json_output:
        from openwop_cli.cli.output import print_json

        print_json(report.to_json())
    else:
        from openwop_cli.report.console import make_console
        from openwop_cli.report.verify import render_verify

        render_verify(make_console(), report)
    return 0 if report.ok else EXIT_BAD_CAPTURE
