"""The command lines: the only code that parses arguments and prints for people.

Every ``python -m msjax.X`` runs ``msjax.cli.X.main`` (``train``, ``play``, ``serve``,
``evaluate``, ``viz``, ``memory``, ``ship``); the modules it names are thin shims into these.
``msjax.cli.args`` holds what they share (checked counts, the ``--config.*``
overrides), ``msjax.cli.boards.board_config`` picks the game a command line names.
Submodules are imported on use (each pulls in what its command needs).
"""

__all__ = ["args", "boards", "evaluate", "memory", "play", "serve", "ship", "train", "viz"]
