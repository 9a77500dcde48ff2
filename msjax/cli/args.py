"""What every command line shares: argparse types that check counts (a bad number is one
``error:`` line naming the option and its allowed range), and the ``--config.*``
overrides of a config file (``config_overrides``)."""

from __future__ import annotations

import argparse
import ast
import dataclasses

__all__ = [
    "at_least_two", "config_overrides", "int_in", "lookahead", "non_negative_int", "positive_int", "positive_float", "search_spec", "seed",
    "solver_fields", "MAX_SEED",
]

OVERRIDE = "--config."
MAX_SEED = 2**32 - 1
"""The largest ``--seed``: a game's key is ``jax.random.key(seed)``, and seeds are offset
per game, so they stay far inside the 64-bit integers JAX converts them to."""


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def at_least_two(text: str) -> int:
    """argparse type: a count of boards, an integer >= 2 (a paired interval needs two)."""
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"{value} must be >= 2")
    return value


def int_in(low: int, high: int):
    """argparse type: an integer in ``[low, high]`` (its name in argparse's messages: ``count``)."""

    def count(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} must be in [{low}, {high}]")
        return value

    return count


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} must be > 0")
    return value


def _count_samples_leaf(text: str, count: str, example: str, largest: int | None = None,
                        leaves: tuple[str, ...] = ("value", "safe"), endgame: int | None = None) -> tuple:
    """``COUNT,N,LEAF`` as ``(COUNT, N, LEAF)``: two integers, COUNT in [1, ``largest``] (>= 1
    without one) and N >= 1, and one of ``leaves``; ``count`` names COUNT in the errors. With
    ``endgame`` (its largest value) an integer ``L`` in [0, ``endgame``] may follow, then a
    number ``T`` in (0, 1]: ``(COUNT, N, LEAF, L)`` or ``(COUNT, N, LEAF, L, T)``."""
    parts = text.split(",")
    form = f"{count},N,LEAF" + (",L,T" if endgame is not None else "")
    sizes = (3, 4, 5) if endgame is not None else (3,)
    if (len(parts) not in sizes or not all(p.isdigit() for p in parts[:2] + parts[3:4])
            or parts[2] not in leaves or not all(_is_float(p) for p in parts[4:])):
        raise argparse.ArgumentTypeError(
            f"{text!r} must be {form}: integers >= 1 and LEAF one of {', '.join(leaves)}"
            + (f", then optionally L, the endgame's most layouts (0 to {endgame}), and T, the tolerance of the "
               "root's clicks (0 < T <= 1)" if endgame is not None else "")
            + f" (e.g. {example})")
    first, samples = int(parts[0]), int(parts[1])
    if largest is None and (first < 1 or samples < 1):
        raise argparse.ArgumentTypeError(f"{text!r}: {count} and N must be >= 1")
    if largest is not None and not 1 <= first <= largest:
        raise argparse.ArgumentTypeError(f"{text!r}: {count}={first} must be in [1, {largest}]")
    if samples < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: N={samples} must be >= 1")
    rest = ()
    if len(parts) >= 4:
        layouts = int(parts[3])
        if layouts > endgame:
            raise argparse.ArgumentTypeError(f"{text!r}: L={layouts} must be in [0, {endgame}]")
        rest = (layouts,)
    if len(parts) == 5:
        tolerance = float(parts[4])
        if not 0 < tolerance <= 1:
            raise argparse.ArgumentTypeError(f"{text!r}: T={tolerance} must be in (0, 1]")
        rest = rest + (tolerance,)
    return (first, samples, parts[2]) + rest


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def lookahead(text: str) -> tuple[int, int, str]:
    """argparse type: ``K,N,LEAF`` (``search.policy_lookahead``'s candidates, drawn layouts
    and leaf value: ``value`` or ``safe``), e.g. ``4,16,value``."""
    return _count_samples_leaf(text, "K", "4,16,value")


def search_spec(text: str) -> tuple:
    """argparse type: ``SIMS,N,LEAF[,L[,T]]`` (``search.network_search``'s simulations, 1 to
    32, drawn layouts, leaf value: ``value``, ``safe`` or ``survival``, and optionally the
    endgame's most layouts, 0 to ``search.MAX_ENDGAME_LAYOUTS``, then the tolerance of the
    root's clicks, in (0, 1]), e.g. ``8,16,value`` or ``4,16,survival,32,0.1``."""
    from msjax.search.endgame import MAX_ENDGAME_LAYOUTS
    from msjax.search.network_search import LEAVES, MAX_SIMULATIONS

    return _count_samples_leaf(text, "SIMS", "8,16,value or 4,16,survival,32,0.1", MAX_SIMULATIONS, LEAVES,
                               MAX_ENDGAME_LAYOUTS)


def solver_fields(text: str) -> dict:
    """argparse type: ``--solver``'s ``"a=1,b='x'"`` -> ``{"a": 1, "b": "x"}``, ``SolverConfig``
    and ``search.SearchConfig`` fields (also the search's former ``SolverConfig`` names,
    ``search.OLD_SOLVER_FIELDS``) with values read as Python literals; ``ArgumentTypeError``
    for an item that is not ``FIELD=VALUE``, an unknown field (the line lists them all) or a
    value that is not a literal. Whether the values fit together is the configs' to say
    (``search.solver_and_guess``)."""
    from msjax.search import OLD_SOLVER_FIELDS, SearchConfig
    from msjax.solver import SolverConfig

    known = [field.name for config in (SolverConfig, SearchConfig) for field in dataclasses.fields(config)]
    known += [name for name in OLD_SOLVER_FIELDS if name not in known]
    fields = {}
    for item in filter(None, text.split(",")):
        name, equals, value = (part.strip() for part in item.partition("="))
        if not equals or not name:
            raise argparse.ArgumentTypeError(f"{item!r} must be FIELD=VALUE (e.g. lookahead_candidates=6)")
        if name not in known:
            raise argparse.ArgumentTypeError(f"unknown field {name!r} in {text!r}; the fields: {', '.join(known)}")
        try:
            fields[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise argparse.ArgumentTypeError(f"{item}: {value} is not a Python literal (quote words: {name}='{value}')") from None
    return fields


def config_overrides(rest: list[str], parser: argparse.ArgumentParser, example: str = "ppo.lr=1e-4") -> list[str]:
    """The ``--config.SECTION.FIELD`` overrides among the arguments ``parser`` left over,
    as ``config.apply_overrides`` takes them: ``--config.a.b=v`` and ``--config.a.b v``
    both give ``"a.b=v"``. Anything else, or an override without a value, is a
    ``parser.error`` (exit status 2) that shows the form, with ``example``."""
    overrides, i = [], 0
    while i < len(rest):
        item = rest[i]
        if not item.startswith(OVERRIDE):
            parser.error(f"unrecognised argument {item!r} (overrides look like {OVERRIDE}{example})")
        if "=" in item:
            overrides.append(item[len(OVERRIDE) :])
            i += 1
        elif i + 1 < len(rest):
            overrides.append(f"{item[len(OVERRIDE):]}={rest[i + 1]}")
            i += 2
        else:
            parser.error(f"{item} needs a value")
    return overrides


def seed(text: str) -> int:
    """argparse type: a seed, an integer in ``[0, MAX_SEED]``."""
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} must be in [0, {MAX_SEED}]")
    return value
