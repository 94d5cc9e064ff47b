from __future__ import annotations

import pytest
from builders import make_run_data

from pgknee.model.results import RunData

# a unit test needs no server: one that takes this long hangs (the suite's default is for the
# integration tests)
UNIT_TIMEOUT_S = 60


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/unit/" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_S))


@pytest.fixture
def run_data() -> RunData:
    return make_run_data()
