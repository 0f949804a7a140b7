"""What runs inside the recorded program: the session, its boundaries, the channel to `wop capture`.

Imported by user programs, so it must import fast: no typer, rich or deepdiff here.
"""
