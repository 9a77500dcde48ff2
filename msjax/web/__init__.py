"""A local web inspector: play Minesweeper in a browser, watch the agent or the solver
play, and compare three beliefs about where the mines are (the agent's mine head, the
rule solver's probabilities with its proven cells, and the NumPy reference's probabilities);
the search overlay lists the search player's candidate guesses with their scores.

``games`` holds the games and computes the beliefs (no web framework); ``programs`` each
board's jitted programs, the boards whose programs are kept and the slot that lets one
compile run at a time; ``app`` is the FastAPI app and its JSON API (which answers only
requests that name this server as their ``Host``); ``static/`` the page (plain HTML, CSS
and JavaScript).
``python -m msjax serve`` is the command line; it needs the ``web`` extra
(``pip install -e '.[web]'``), as does importing this package.
"""

from msjax.web.app import create_app, free_port, serve_in_thread
from msjax.web.games import MAX_ROWS, OVERLAYS, PLAYERS, Game, GameError, Inspector
from msjax.web.programs import CompileBusy

__all__ = ["MAX_ROWS", "OVERLAYS", "PLAYERS", "CompileBusy", "Game", "GameError", "Inspector", "create_app", "free_port",
           "serve_in_thread"]
