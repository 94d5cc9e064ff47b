"""Timestamps as the store keeps them (ISO 8601, UTC, milliseconds): shared by the collectors,
which stamp their samples, and the store, which stamps runs and steps."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    return datetime.now(UTC).isoformat(sep=" ", timespec="milliseconds")


def iso_of(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(sep=" ", timespec="milliseconds")
