from __future__ import annotations

import pytest
from builders import make_run_data

from pgknee.types import RunData


@pytest.fixture
def run_data() -> RunData:
    return make_run_data()
