"""How the analysis's sentences write a count of things. Pure."""

from __future__ import annotations


def plural(n: float, word: str, ending: str = "s") -> str:
    """The word for n of them: 'checkpoint' for one, 'checkpoints' (or 'processes', ending 'es')
    for any other number."""
    return word if n == 1 else word + ending


def clause(template: str, v: float | str | None) -> str:
    """A clause of a sentence that says v, as `template` writes it (', the relay at {:.0f}% of a
    core'), or nothing without v: None, or an empty text."""
    return "" if v is None or v == "" else template.format(v)
