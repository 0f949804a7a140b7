"""Requirements only an OpenWOP host can have (HTTP endpoints, auth, tenancy, triggers): reported as skipped, with why."""

import pytest

from tests.conformance.spec import HOST_ONLY


@pytest.mark.parametrize("spec, section, text, reason", HOST_ONLY, ids=[f"{row[0]}:{row[1]}" for row in HOST_ONLY])
def test_host_only_requirement(spec, section, text, reason):
    pytest.skip(f"host-only: {reason}")
