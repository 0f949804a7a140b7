"""The names of the environment variables wop's parent sets for a recorded program's processes, and which Python
command lines run the bootstrap it puts on PYTHONPATH.

They are here, apart from the modules that read them (runtime.session, runtime.children), so that the parent builds
the child's environment without importing those modules: their imports would stand between `wop capture` or
`wop replay` and the start of its program.
"""

import itertools
import os

ENV_MODE = "WOP_MODE"
ENV_CAPTURE_DIR = "WOP_CAPTURE_DIR"
ENV_PARENT_PID = "WOP_PARENT_PID"
ENV_PROXY = "WOP_PROXY"  # host:port of `wop --proxy`, which records or serves the program's LLM traffic
ENV_AMBIENT = "WOP_AMBIENT"  # "0": the program's clock, uuid and random reads are not recorded
# What a replayed or forked process is told (runtime.replay_child reads them):
ENV_SOURCE = "WOP_REPLAY_FROM"  # the source capture's directory
ENV_POLICY = "WOP_POLICY"  # strict | lenient
ENV_FROM_SEQ = "WOP_FROM_SEQ"  # a fork's branch point
ENV_ALLOW_TOOLS = "WOP_ALLOW_TOOLS"  # JSON list of the tools run live
ENV_OVERRIDES = "WOP_OVERRIDES"  # JSON object of a fork's --set values


def runs_bootstrap(options: list[str]) -> bool:
    """False when the interpreter's options skip the bootstrap on PYTHONPATH: -I (isolated), -E (PYTHON* variables
    ignored), -S (no site)."""
    takes_value = False
    for word in options:
        if takes_value:
            takes_value = False
            continue
        if not word.startswith("-") or word in ("-", "--"):
            return True
        if word.startswith("--"):
            continue
        for index, letter in enumerate(word[1:]):
            if letter in "ISE":
                return False
            if letter in "cm":  # what follows is the program
                return True
            if letter in "XW":
                takes_value = index == len(word) - 2
                break
    return True


def script_interpreter(path: str) -> tuple[list[str], bool]:
    """The words of a script's `#!` line from its interpreter on (after `env` and env's options), and whether `env`
    finds that interpreter on PATH; ([], False) for a file without one."""
    try:
        with open(path, "rb") as handle:
            first_line = handle.readline(256)
    except OSError:
        return [], False
    words = first_line[2:].decode("utf-8", "replace").split() if first_line.startswith(b"#!") else []
    if words and os.path.basename(words[0]) == "env":
        return [word for word in itertools.dropwhile(lambda word: word.startswith("-"), words[1:])], True
    return words, False
