"""Where wop keeps its files: WOP_HOME, else the platform's per-user data directory.

Apart from the store (store.py) because `wop capture` needs the path before it starts the program,
and the store's readers are more than that moment can afford.
"""

import os
from pathlib import Path


def wop_home() -> Path:
    """WOP_HOME, or the platform's per-user data directory for wop."""
    home = os.environ.get("WOP_HOME")
    if home:
        return Path(home).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("wop", appauthor=False))


def captures_root() -> Path:
    """The directory that holds one sub-directory per stored capture."""
    return wop_home() / "captures"
