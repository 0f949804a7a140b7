"""A Ctrl-C that lands in orjson's initialization crashes Python (SIGSEGV): wop loads orjson with Ctrl-C held
(heldsignals.imported_held) where a user may press it, the start of `wop replay` and `wop capture` among them
(a sweep of 80 Ctrl-Cs in `wop replay`'s first 120 ms crashed it 5 times; 0 in 300 since)."""

import subprocess
import sys
import textwrap

CTRL_C_WHILE_ORJSON_LOADS = """
    import os, signal, sys

    class CtrlCWhileUuidLoads:
        # finds nothing: it sends this process a Ctrl-C as orjson's initialization imports uuid
        def find_spec(self, name, path=None, target=None):
            if name == "uuid":
                sys.meta_path.remove(self)
                os.kill(os.getpid(), signal.SIGINT)
            return None

    sys.meta_path.insert(0, CtrlCWhileUuidLoads())
    try:
        if sys.argv[1] == "held":
            from openwop_cli.heldsignals import imported_held

            imported_held("orjson")
        else:
            import orjson
    except KeyboardInterrupt:
        print("interrupted; orjson loaded:", hasattr(sys.modules.get("orjson"), "dumps"))
"""


def run(tmp_path, how: str) -> subprocess.CompletedProcess:
    program = tmp_path / "ctrl_c_while_orjson_loads.py"
    program.write_text(textwrap.dedent(CTRL_C_WHILE_ORJSON_LOADS))
    return subprocess.run([sys.executable, str(program), how], capture_output=True, text=True, timeout=60)


def test_a_ctrl_c_while_orjson_loads_held_is_a_keyboard_interrupt_once_it_is_loaded(tmp_path):
    """The same Ctrl-C with a plain `import orjson` ends Python with SIGSEGV (orjson 3.13, Python 3.11)."""
    done = run(tmp_path, "held")
    assert done.returncode == 0 and done.stdout == "interrupted; orjson loaded: True\n", done.stderr

