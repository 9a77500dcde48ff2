"""Checks of config fields and function arguments, in one style for the whole package.

A value outside what it may hold raises a one-line ``ValueError`` that names the owner
(a config class or a function), the field or argument, the value as Python writes it
(``repr``: the string ``'4'`` shows quoted, so it is not mistaken for the int ``4``) and
what it must be: ``"SolverConfig.max_layer='4' must be an int in {1, 2, 3, 4}"``. The
checks are type-aware: ``True`` is not an int, ``'4'`` is not an int, ``2.5`` is not an
int, and a number is an int or a float, never a bool.

``Allowed`` says what a value may be; ``ints``, ``int_in``, ``numbers``, ``one_of``,
``instance_of``, ``tuple_of``, ``optional`` and ``BOOL`` build the common ones. ``check_value`` checks one
value, ``check_fields`` the fields of a config, ``check_effect`` refuses an option that
another field switches off, and ``check_array`` the shape and dtype of an array argument.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Allowed:
    """What a value may be.

    Attributes:
      description: completes "must be ...": ``"an int >= 1"``.
      test: ``value -> bool``, whether the value is allowed.
    """

    description: str
    test: Callable[[Any], bool]

    def __str__(self) -> str:
        return self.description

    def noted(self, note: str) -> Allowed:
        """The same check, its description followed by ``(note)``: what a value means."""
        return Allowed(f"{self.description} ({note})", self.test)


def is_int(value: Any) -> bool:
    """A Python int, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A Python int or float (``numpy.float64`` included), not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bounds(low, high, low_open: bool = False, high_open: bool = False) -> tuple[str, Callable[[Any], bool]]:
    """The text (``">= 1"``, ``"in (0, 1]"``) and the test of the interval ``low..high``
    (``None``: unbounded on that side)."""
    above = (lambda v: v > low) if low_open else (lambda v: v >= low)
    below = (lambda v: v < high) if high_open else (lambda v: v <= high)
    if low is not None and high is not None:
        text = f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        return text, lambda v: above(v) and below(v)
    if low is not None:
        return f"{'>' if low_open else '>='} {low}", above
    if high is not None:
        return f"{'<' if high_open else '<='} {high}", below
    return "", lambda v: True


def ints(low: int | None = None, high: int | None = None) -> Allowed:
    """An int in ``[low, high]`` (either bound may be None): ``"an int >= 1"``."""
    text, inside = _bounds(low, high)
    return Allowed(f"an int {text}".rstrip(), lambda v: is_int(v) and inside(v))


def int_in(*choices: int) -> Allowed:
    """One of the ints ``choices``: ``"an int in {1, 2, 3, 4}"``."""
    return Allowed(f"an int in {{{', '.join(map(str, choices))}}}", lambda v: is_int(v) and v in choices)


def numbers(low: float | None = None, high: float | None = None, low_open: bool = False,
            high_open: bool = False) -> Allowed:
    """A number (int or float) in the interval: ``"a number in (0, 1]"``, ``"a number > 0"``."""
    text, inside = _bounds(low, high, low_open, high_open)
    return Allowed(f"a number {text}".rstrip(), lambda v: is_number(v) and inside(v))


def one_of(*choices: Any) -> Allowed:
    """One of ``choices``, of the same type: ``"one of 'bp', 'exact'"``."""
    return Allowed(
        f"one of {', '.join(map(repr, choices))}",
        lambda v: any(type(v) is type(choice) and v == choice for choice in choices),
    )


def instance_of(cls: type) -> Allowed:
    """An instance of ``cls``: ``"an ExactLimits"``."""
    article = "an" if cls.__name__[:1].lower() in "aeiou" else "a"
    return Allowed(f"{article} {cls.__name__}", lambda v: isinstance(v, cls))


def tuple_of(allowed: Allowed, non_empty: bool = False) -> Allowed:
    """A tuple (non-empty if ``non_empty``) whose every item ``allowed`` allows:
    ``"a tuple, each item a number in [0, 1]"``."""
    return Allowed(
        f"a {'non-empty ' if non_empty else ''}tuple, each item {allowed}",
        lambda v: isinstance(v, tuple) and (bool(v) or not non_empty) and all(allowed.test(item) for item in v),
    )


def optional(allowed: Allowed) -> Allowed:
    """None, or what ``allowed`` allows."""
    return Allowed(f"None or {allowed}", lambda v: v is None or allowed.test(v))


BOOL = Allowed("a bool", lambda v: isinstance(v, bool))

# The names ``check_fields`` takes for the ranges the stage configs use (their messages
# keep these words: ``"PPOConfig.gamma=1.5 must be in [0, 1]"``; a value that is no number
# fails them too).
RANGES = {
    "a bool": BOOL,
    "an int >= 1": ints(1),
    "> 0": Allowed("> 0", numbers(0, low_open=True).test),
    ">= 0": Allowed(">= 0", numbers(0).test),
    "in [0, 1]": Allowed("in [0, 1]", numbers(0, 1).test),
}


def check_value(owner: str, name: str, value: Any, allowed: Allowed) -> None:
    """Raises ``ValueError`` (``"SolverConfig.max_layer='4' must be an int in {1, 2, 3, 4}"``)
    unless ``allowed`` allows ``value``; ``owner``: the config class or function it belongs to."""
    if not allowed.test(value):
        raise ValueError(f"{owner}.{name}={value!r} must be {allowed}")


def check_fields(section: Any, checks: Iterable[tuple[Allowed | str, tuple[str, ...]]]) -> None:
    """Raises ``ValueError`` (``"PPOConfig.lr=-1 must be > 0"``) for the first field
    of ``section`` outside its range; ``checks``: ``(allowed, field names)`` pairs, in order,
    ``allowed`` an ``Allowed`` or a name of ``RANGES`` (``"a bool"``, ``"an int >= 1"``,
    ``"> 0"``, ``">= 0"``, ``"in [0, 1]"``)."""
    owner = type(section).__name__
    for allowed, names in checks:
        allowed = RANGES[allowed] if isinstance(allowed, str) else allowed
        for name in names:
            check_value(owner, name, getattr(section, name), allowed)


def check_effect(owner: str, name: str, value: Any, takes_effect: bool, condition: str, current: str) -> None:
    """Raises ``ValueError`` (``"SolverConfig.exact_limits=ExactLimits(...) has no effect unless
    probabilities='exact' (probabilities='bp')"``) for an option that the rest of its
    config switches off: ``condition`` says what it needs, ``current`` what holds instead."""
    if not takes_effect:
        raise ValueError(f"{owner}.{name}={value!r} has no effect unless {condition} ({current})")


def check_array(owner: str, name: str, value: Any, expected: str, ndim: int, kinds: str,
                shape: tuple[int, ...] | None = None) -> None:
    """Raises ``ValueError`` unless ``value`` is an array (NumPy, JAX, or a tracer) of
    ``ndim`` axes, a dtype of one of the NumPy ``kinds`` (``"b"`` bool, ``"iu"``
    integers) and, where given, the ``shape``.

    Args:
      owner: the function, as the message names it.
      name: its argument, as the message names it.
      expected: the array's contract, as the message shows it: ``"bool[B, H, W]"``.
    """
    where = f"{owner}.{name}"
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        raise ValueError(f"{where} has type {type(value).__name__}; it must be an array {expected}")
    if len(value.shape) != ndim or (shape is not None and tuple(value.shape) != tuple(shape)):
        raise ValueError(f"{where} has shape {tuple(value.shape)}; it must be {expected}")
    if np.dtype(value.dtype).kind not in kinds:
        raise ValueError(f"{where} has dtype {np.dtype(value.dtype).name}; it must be {expected}")
