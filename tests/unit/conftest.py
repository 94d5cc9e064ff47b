from __future__ import annotations

from collections.abc import Iterator

import pytest
from builders import make_run_data

from pgknee.model.results import RunData
from pgknee.system import registry

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


@pytest.fixture(autouse=True)
def _registry_closed() -> Iterator[None]:
    """What a test started through pgknee's process registry outside a command is let go after it,
    as a command lets go at its end (cli.main): the doctor's findings, called directly, started the
    registry's watchdog, which then outlived the test and the worker warned at its exit
    ("ResourceWarning: subprocess ... is still running")."""
    yield
    registry.close()
