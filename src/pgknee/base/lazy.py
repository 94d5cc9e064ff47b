"""scipy's modules, imported when first asked for: loading scipy.stats takes about a second, and
most commands (scenarios, doctor, size, a refusal of bad input) never need it."""

from __future__ import annotations

from typing import Any


def stats() -> Any:
    from scipy import stats as module

    return module


def optimize() -> Any:
    from scipy import optimize as module

    return module
