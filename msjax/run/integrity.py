"""Whether a restored checkpoint holds the arrays that were saved, and those of this run.

At save time ``array_digests`` records a SHA-256 digest of every array's bytes (in the
checkpoint's ``meta``); at restore ``first_damage`` recomputes them and checks that
every floating-point array is finite, so flipped or truncated bytes are named instead
of loading as NaN weights. Arrays this process cannot read whole (batch-sharded arrays
of a multi-process run) are neither digested nor checked. ``check_matches`` and
``missing_arrays`` say whether the arrays are those of this run's state; the errors a
restore raises (``CheckpointError`` and its kinds) live here too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

RENAMED_ARRAYS = {"curriculum.level": "curriculum.stage"}
"""Arrays of today's states whose checkpoints, written before a rename, store them under
another name (today's name -> the stored one); a restore reads either."""


def stored_array(by_name: dict[str, Any], name: str) -> Any:
    """The entry of ``by_name`` (a mapping of stored array names) for today's ``name``,
    under its stored name where it was renamed (``RENAMED_ARRAYS``)."""
    return by_name[name] if name in by_name else by_name.get(RENAMED_ARRAYS.get(name, name))


class CheckpointError(ValueError):
    """A checkpoint is missing, damaged, or does not fit the requested run."""


class StateStructureMismatch(CheckpointError):
    """A checkpoint's arrays are intact but are not those of this run's state: another
    optimizer, or a setting that changes the state's structure."""


class DamagedCheckpoint(CheckpointError):
    """A checkpoint's files are unreadable or differ from what was saved (another
    checkpoint of the run may still be intact)."""


def leaf_name(path: tuple) -> str:
    """``env_states.counts`` for a key path, whether its keys are attributes or dict keys."""
    parts = []
    for entry in path:
        for attr in ("name", "key", "idx"):
            if hasattr(entry, attr):
                parts.append(str(getattr(entry, attr)))
                break
    return ".".join(parts)


def _readable(leaf: Any) -> bool:
    """Whether this process can read all of ``leaf`` (not so for a batch-sharded array of
    a multi-process run)."""
    return not isinstance(leaf, jax.Array) or leaf.is_fully_addressable or leaf.sharding.is_fully_replicated


def _host_array(leaf: Any) -> np.ndarray:
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        return np.asarray(leaf.addressable_data(0))
    return np.asarray(jax.device_get(leaf))


def array_digests(tree: Any) -> dict[str, str]:
    """``{leaf name: SHA-256 hex digest of its bytes}`` for every array of ``tree`` (no
    typed PRNG keys: ``checkpoint.keys_to_data`` first) that this process can read whole."""
    digests = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if _readable(leaf):
            array = np.ascontiguousarray(_host_array(leaf))
            digests[leaf_name(path)] = hashlib.sha256(array.view(np.uint8).reshape(-1).data).hexdigest()
    return digests


def first_damage(tree: Any, digests: dict[str, str] | None) -> str | None:
    """What is wrong with the first damaged array of ``tree`` (its bytes differ from
    ``digests``, when given, or it holds NaN or infinity), or None when none is."""
    got = array_digests(tree) if digests else {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        name = leaf_name(path)
        if name in got and name in digests and got[name] != digests[name]:
            return f"{name} differs from the array that was saved"
        if _readable(leaf) and jnp.issubdtype(leaf.dtype, jnp.inexact) and not np.isfinite(_host_array(leaf)).all():
            return f"{name} holds NaN or infinity (damaged files, or a diverged run)"
    return None


def missing_arrays(stored: dict[str, Any], template: Any) -> list[str]:
    """The names of ``template``'s arrays (a state, concrete or abstract) that are not among
    ``stored`` (``Checkpoints.stored_arrays``), renamed arrays (``RENAMED_ARRAYS``) found
    under either name."""
    names = [leaf_name(path) for path, _ in jax.tree_util.tree_leaves_with_path(template)]
    return [name for name in names if stored_array(stored, name) is None]


def renamed_digests(digests: dict[str, str] | None) -> dict[str, str] | None:
    """``digests`` (by stored name) with each renamed array's under today's name too."""
    if digests is None:
        return None
    return {**digests, **{new: digests[old] for new, old in RENAMED_ARRAYS.items() if old in digests}}


def check_intact(restored: Any, digests: dict[str, str] | None, path: Path) -> None:
    """Raises ``DamagedCheckpoint`` naming the first array of ``restored`` (key data, no
    typed keys) whose bytes differ from ``digests`` (recorded at save; None for
    checkpoints saved before digests) or that holds NaN or infinity."""
    damage = first_damage(restored, digests)
    if damage is not None:
        raise DamagedCheckpoint(f"checkpoint {path} is damaged: {damage}")


def check_matches(restored: Any, abstract: Any, path: Path) -> None:
    """Raises ``CheckpointError`` naming the first leaf whose structure, shape or dtype differs."""
    if jax.tree.structure(restored) != jax.tree.structure(abstract):
        raise CheckpointError(f"checkpoint {path} holds a differently structured state than this run")
    for (where, got), want in zip(jax.tree_util.tree_leaves_with_path(restored), jax.tree.leaves(abstract)):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise CheckpointError(
                f"checkpoint {path}: {jax.tree_util.keystr(where)} is {got.dtype}{list(got.shape)}, "
                f"this run expects {want.dtype}{list(want.shape)}"
            )
