"""`python -m openwop_cli` runs the wop command line."""

from openwop_cli.cli.entry import main

main()
