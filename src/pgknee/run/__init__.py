"""The run loop, in parts with one job each: preflight (what is refused before anything
starts), the session (what lives for the whole run), the step (one step, measured and judged
into a frozen StepResult), the orchestrator (order, results to the store writer, signals, how
the run ended). The CLI calls preflight, dry_run and Sweep."""

from pgknee.run.orchestrator import Sweep
from pgknee.run.preflight import Prepared, dry_run, preflight
from pgknee.run.ui import UI, QuietUI

__all__ = ["UI", "Prepared", "QuietUI", "Sweep", "dry_run", "preflight"]
