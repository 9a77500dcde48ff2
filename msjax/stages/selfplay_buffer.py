"""States of past self-play rollouts, kept with their targets to be learned from again.

On 16x16x40 about one move in two hundred is a guess that the search improves on: one rollout
of 2,048 moves holds about ten. The ``SearchBuffer`` keeps the last ``capacity`` of the states
it is given (``selfplay`` gives it every searched guess) with their targets
(``SearchTargets``: the improved policy, the move played, the game's outcome, the mines), and
each update learns from ``SelfPlayConfig.buffer_batch`` of them drawn at random beside the
rollout's own states: each guess is learned from over several updates instead of once
(docs/experiments/100: without it self-play lost 1.28 points of 16x16 games, with it none).
Keeping also the states whose move played is not the network's own favourite was measured
and did not pay. It lives in ``SelfPlayState`` (checkpointed and resumed with it); its arrays
are fixed in shape (``capacity`` slots, ``count`` of them filled).

A state's value target is its outcome as the rollout that played it saw it (the value head's
estimate then, for a game still in play at the rollout's end); it is not revised later.
"""

from __future__ import annotations

import flax
import jax
import jax.numpy as jnp

from msjax.stages.selfplay_targets import SearchTargets


@flax.struct.dataclass
class SearchBuffer:
    """A ring of ``capacity`` states with their targets.

    Attributes:
      states: ``SearchTargets``, leaves ``[capacity, ...]``; a slot never written holds zeros
        and ``valid`` False.
      count: int32[], the slots filled (at most ``capacity``).
      next_slot: int32[], the slot the next state is written to (the oldest once full).
    """

    states: SearchTargets
    count: jax.Array
    next_slot: jax.Array

    @property
    def capacity(self) -> int:
        return self.states.searched.shape[0]


def empty_buffer(capacity: int, example: SearchTargets) -> SearchBuffer:
    """A buffer of ``capacity`` empty slots for states shaped like ``example``'s (leaves
    ``[B, ...]`` of any ``B``, or their ``jax.ShapeDtypeStruct``s)."""
    if not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity={capacity!r} must be an int >= 1")
    states = jax.tree.map(lambda x: jnp.zeros((capacity,) + tuple(x.shape[1:]), x.dtype), example)
    return SearchBuffer(states=states.replace(valid=jnp.zeros(capacity, bool)), count=jnp.int32(0),
                       next_slot=jnp.int32(0))


def add_states(buffer: SearchBuffer, batch: SearchTargets, keep: jax.Array) -> SearchBuffer:
    """``buffer`` with ``batch``'s valid states that ``keep`` (bool[B]) marks (leaves
    ``[B, ...]``) written over its oldest, in ``batch``'s order; when ``batch`` holds more than
    ``capacity`` of them, its last ``capacity``."""
    capacity = buffer.capacity
    take = keep & batch.valid
    num_taken = jnp.sum(take, dtype=jnp.int32)
    rank = jnp.cumsum(take, dtype=jnp.int32) - 1
    skipped = jnp.maximum(num_taken - capacity, 0)
    written = take & (rank >= skipped)
    slot = jnp.where(written, (buffer.next_slot + rank - skipped) % capacity, capacity)  # capacity: dropped
    added = batch.replace(valid=jnp.ones(take.shape, bool))
    states = jax.tree.map(lambda old, new: old.at[slot].set(new, mode="drop"), buffer.states, added)
    num_added = num_taken - skipped
    return SearchBuffer(
        states=states,
        count=jnp.minimum(buffer.count + num_added, capacity),
        next_slot=(buffer.next_slot + num_added) % capacity,
    )


def draw(buffer: SearchBuffer, key: jax.Array, size: int) -> SearchTargets:
    """``size`` states drawn uniformly, with replacement, from the filled slots (leaves
    ``[size, ...]``); from an empty buffer, ``size`` empty slots (``valid`` False)."""
    index = jax.random.randint(key, (size,), 0, jnp.maximum(buffer.count, 1))
    return jax.tree.map(lambda x: x[index], buffer.states)
