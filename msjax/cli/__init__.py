"""The command lines: the only code that parses arguments and prints for people.

``python -m msjax.evaluate`` runs ``msjax.cli.evaluate.main``, ``python -m msjax.viz``
runs ``msjax.cli.viz.main`` and ``python -m msjax.memory`` runs ``msjax.cli.memory.main``;
``msjax.cli.boards.board_config`` picks the game a command line names. Submodules are imported on use (each pulls in what its command needs).
"""

__all__ = ["args", "boards", "evaluate", "memory", "viz"]
