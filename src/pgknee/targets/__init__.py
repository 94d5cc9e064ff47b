"""The system under test: the embedded throwaway cluster or a remote DSN."""

from pgknee.targets.base import Endpoint, Target

__all__ = ["Endpoint", "Target"]
