"""Trained agents that ship inside the package, loaded by name (``msjax.load_agent("beginner")``).

``files`` reads and writes a shipped agent's folder (parameters, config, card, digests);
``from_run`` builds one from a training run (``python -m msjax ship`` runs it). This
package exports the reading side; ``from_run`` reads checkpoints, so it is imported by
name where a run is shipped.
"""

from msjax.shipped.files import (
    SHIPPED_DIR_VARIABLE,
    ShippedAgentError,
    card,
    describe,
    is_agent_name,
    load,
    read,
    shipped_dir,
    shipped_names,
)

__all__ = [
    "SHIPPED_DIR_VARIABLE",
    "ShippedAgentError",
    "card",
    "describe",
    "is_agent_name",
    "load",
    "read",
    "shipped_dir",
    "shipped_names",
]
