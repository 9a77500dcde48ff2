"""The command lines: the only code that parses arguments and prints for people.

``msjax X`` (``python -m msjax X``, ``msjax/__main__.py``) runs ``msjax.cli.X.main``
(``train``, ``play``, ``serve``, ``evaluate``, ``viz``, ``memory``, ``ship``);
``python -m msjax.train`` is ``msjax train``'s one alias.
``msjax.cli.args`` holds what they share (checked counts, the ``--config.*``
overrides); ``msjax.env.board_config`` picks the game a command line names.
Submodules are imported on use (each pulls in what its command needs).
"""

__all__ = ["args", "evaluate", "memory", "play", "serve", "ship", "train", "viz"]
