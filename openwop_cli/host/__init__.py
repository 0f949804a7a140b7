"""What runs in the `wop` process around a program: launching it, collecting what its processes send, the proxy,
its output, and running replays, batches and repeats. Never imported inside a recorded program."""
