"""Whether a restored checkpoint holds the arrays that were saved.

At save time ``array_digests`` records a SHA-256 digest of every array's bytes (in the
checkpoint's ``meta``); at restore ``first_damage`` recomputes them and checks that
every floating-point array is finite, so flipped or truncated bytes are named instead
of loading as NaN weights. Arrays this process cannot read whole (batch-sharded arrays
of a multi-process run) are neither digested nor checked.
"""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


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
