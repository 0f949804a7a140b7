"""[tool.wop] in pyproject.toml: every way TOML can spell the table is read; a file without it is not parsed."""

import pytest

from openwop_cli.config import load_settings
from openwop_cli.errors import UsageError


@pytest.mark.parametrize("text", [
    '[tool.wop]\nredact = "strict"\n',
    '[tool . "wop"]\nredact = "strict"\n',
    "[tool.'wop']\nredact = 'strict'\n",
    'tool.wop.redact = "strict"\n',
    '[tool]\nwop = {redact = "strict"}\n',
    '[tool]\nwop.redact = "strict"\n',
    'tool = {wop = {redact = "strict"}}\n',
    '[project]\nname = "x"\n\n[tool.other]\na = 1\n[tool.wop]\n\tredact = "strict"\n',
])
def test_every_spelling_of_the_tool_wop_table_is_read(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text(text)
    assert load_settings(tmp_path).redact == "strict"


def test_a_pyproject_without_a_wop_table_gives_the_defaults_and_a_broken_wop_table_is_a_usage_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "openwop-app"\nkeywords = ["wopper"]\n')
    assert load_settings(tmp_path).redact == "default"
    (tmp_path / "pyproject.toml").write_text('[tool.wop]\nredact = "strict\n')
    with pytest.raises(UsageError, match=r"cannot read \[tool.wop\]"):
        load_settings(tmp_path)
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.wop]\nredact = "\xff"\n')
    with pytest.raises(UsageError, match=r"cannot read \[tool.wop\]"):
        load_settings(tmp_path)
