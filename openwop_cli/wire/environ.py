"""The names of the environment variables wop's parent sets for a recorded program's processes.

They are here, apart from the modules that read them, so that the parent builds the child's environment without
importing those modules: their imports would stand between `wop replay` and the start of its program.
"""

ENV_MODE = "WOP_MODE"
ENV_CAPTURE_DIR = "WOP_CAPTURE_DIR"
ENV_PARENT_PID = "WOP_PARENT_PID"
ENV_PROXY = "WOP_PROXY"  # host:port of `wop --proxy`, which records or serves the program's LLM traffic
ENV_AMBIENT = "WOP_AMBIENT"  # "0": the program's clock, uuid and random reads are not recorded
