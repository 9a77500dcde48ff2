"""Board geometry shared by the reference analysis, its player and its game: neighbour lists."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def neighbour_lists(height: int, width: int) -> tuple[tuple[int, ...], ...]:
    """For each cell (row-major index) the indices of its up to 8 neighbours."""
    lists = []
    for r in range(height):
        for c in range(width):
            lists.append(
                tuple(
                    rr * width + cc
                    for rr in range(max(r - 1, 0), min(r + 2, height))
                    for cc in range(max(c - 1, 0), min(c + 2, width))
                    if (rr, cc) != (r, c)
                )
            )
    return tuple(lists)
