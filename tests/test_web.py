"""The inspector's JSON API through FastAPI's test client (one app per module), and the
``msjax serve`` command line's refusals. Boards are 4x4 with 2 mines (the tiny agent's)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the web extra is not installed: pip install -e '.[web]'")

from fastapi.testclient import TestClient  # noqa: E402

from msjax import web  # noqa: E402
from msjax.cli import serve  # noqa: E402
from msjax.run.agents import load_agent  # noqa: E402
from test_solver_exact import ONE_PASS, survival_by_host_search  # noqa: E402
from tiny_runs import saved_run  # noqa: E402

BOARD = "4x4x2"


@pytest.fixture(scope="module")
def inspector(tmp_path_factory):
    run = saved_run(tmp_path_factory.mktemp("web") / "tiny")
    return web.Inspector(load_agent(run), "tiny", default_board=BOARD,
                         search_limits=ONE_PASS)  # compiles a third as long, enough for 4x4


@pytest.fixture(scope="module")
def client(inspector):
    with TestClient(web.create_app(inspector), base_url="http://127.0.0.1") as test_client:
        yield test_client


def new_game(client, seed=1, **extra) -> dict:
    response = client.post("/api/games", json={"board": BOARD, "seed": seed, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def finished_game(client) -> dict:
    game = new_game(client, seed=5)
    while game["status"] in ("new", "playing"):
        game = client.post(f"/api/games/{game['id']}/step", json={"player": "solver"}).json()
    return game


def test_page_and_its_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


def test_nothing_outside_the_static_folder_is_reachable(client):
    for path in ("/static/../games.py", "/static/%2e%2e/games.py", "/static/..%2fgames.py", "/docs", "/openapi.json"):
        assert client.get(path).status_code == 404, path


def test_info_names_the_agent_boards_and_limits(client):
    info = client.get("/api/info").json()
    assert info["agent"] == "tiny" and info["default_board"] == BOARD
    assert info["boards"]["expert"] == [16, 30, 99] and info["max_rows"] == web.MAX_ROWS


def test_new_game_is_unrevealed_with_its_seed(client):
    game = new_game(client, seed=7)
    assert (game["status"], game["seed"], game["rows"], game["cols"], game["mines"]) == ("new", 7, 4, 4, 2)
    assert game["board"] == ["####"] * 4 and game["moves"] == 0


def test_get_returns_the_same_game(client):
    game = new_game(client)
    assert client.get(f"/api/games/{game['id']}").json()["board"] == game["board"]


def test_reveal_opens_the_clicked_cell(client):
    game = new_game(client)
    after = client.post(f"/api/games/{game['id']}/move", json={"kind": "reveal", "row": 0, "col": 0}).json()
    assert after["board"][0][0] not in "#F" and after["status"] in ("playing", "won")
    assert after["last_move"] == {"player": "you", "kind": "reveal", "row": 0, "col": 0, "layer": None}


def test_flag_toggles_on_and_off(client):
    game = new_game(client)
    url = f"/api/games/{game['id']}/move"
    flagged = client.post(url, json={"kind": "flag", "row": 1, "col": 2}).json()
    assert flagged["board"][1][2] == "F" and flagged["flags"] == 1
    assert client.post(url, json={"kind": "flag", "row": 1, "col": 2}).json()["board"][1][2] == "#"


def test_solver_finishes_a_game_and_the_tally_counts_it(client):
    before = client.get("/api/tally").json()["played"]
    game = finished_game(client)
    assert game["status"] in ("won", "lost") and game["last_move"]["player"] == "solver"
    assert game["last_move"]["layer_name"]
    assert client.get("/api/tally").json()["played"] == before + 1


def test_agent_step_plays_one_move(client):
    game = new_game(client)
    after = client.post(f"/api/games/{game['id']}/step", json={"player": "agent"}).json()
    assert after["moves"] == 1 and after["last_move"]["player"] == "agent"


def test_overlays_give_every_cell_a_probability(client):
    game = new_game(client)
    client.post(f"/api/games/{game['id']}/move", json={"kind": "reveal", "row": 0, "col": 0})
    beliefs = client.get(f"/api/games/{game['id']}?overlays=agent,solver,exact").json()["beliefs"]
    for name in ("agent", "solver", "exact"):
        grid = beliefs[name]["mine"]
        assert len(grid) == 4 and all(len(row) == 4 and all(0 <= p <= 1 for p in row) for row in grid), name
    assert beliefs["agent"]["top"] and all(p["layer"] in (1, 2, 3) for p in beliefs["solver"]["proven"])


def test_the_search_overlay_scores_the_candidate_guesses(client):
    # A 1 in the corner: one mine among its three neighbours (each 1/3), the other on
    # the 12 cells beyond (1/12 each): the candidates are those 12 (the neighbours are
    # far less safe than the 10% window), 36 layouts are too many for the endgame. Whatever
    # a safe far cell shows, a cell is then certainly safe: each survives as often as it is safe.
    game = new_game(client, seed=1, safe_first_click=True)
    game = client.post(f"/api/games/{game['id']}/move", json={"kind": "reveal", "row": 0, "col": 0}).json()
    assert game["board"][0] == "1###" and game["board"][1:] == ["####"] * 3
    search = client.get(f"/api/games/{game['id']}?overlays=search").json()["beliefs"]["search"]
    assert search["exact"] and search["endgame"] is None and len(search["candidates"]) == 6
    revealed = np.zeros((4, 4), bool)
    revealed[0, 0] = True
    counts = np.where(revealed, 1, 0)
    for candidate in search["candidates"]:
        cell = 4 * candidate["row"] + candidate["col"]
        assert candidate["row"] >= 2 or candidate["col"] >= 2
        assert candidate["safe"] == pytest.approx(11 / 12, abs=1e-4)
        survive = survival_by_host_search(revealed, counts, 2, cell, depth=1, tolerance=0.0)
        assert candidate["survive"] == pytest.approx(survive, abs=1e-3)
    assert [c["survive"] for c in search["candidates"]] == sorted((c["survive"] for c in search["candidates"]), reverse=True)


@pytest.mark.parametrize("ending", ["lost", "won"])
def test_once_the_game_is_over_every_overlay_says_so_and_exact_and_search_show_the_layout(client, inspector, ending):
    game = new_game(client, seed=1, safe_first_click=True)
    url = f"/api/games/{game['id']}"
    game = client.post(url + "/move", json={"kind": "reveal", "row": 0, "col": 0}).json()
    assert game["board"] == ["1###", "####", "####", "####"]  # as in the search test: not over yet
    mines = np.asarray(inspector.game(game["id"]).state.mine_mask)
    for row, col in np.argwhere(mines if ending == "lost" else ~mines):
        if game["status"] == "playing" and game["board"][row][col] == "#":
            game = client.post(url + "/move", json={"kind": "reveal", "row": int(row), "col": int(col)}).json()
    beliefs = client.get(url + "?overlays=exact,search,solver,agent").json()["beliefs"]
    assert game["status"] == ending
    for name in ("exact", "search", "solver", "agent"):
        assert beliefs[name]["note"].startswith(f"the game is over ({ending})"), name
    for name in ("exact", "search"):
        assert beliefs[name]["mine"] == mines.astype(float).tolist(), name
    assert beliefs["search"]["candidates"] == [] and beliefs["search"]["endgame"] is None


@pytest.mark.parametrize("rule", [{}, {"safe_first_click": True}])
def test_before_the_first_click_every_cell_reads_0_with_a_note_saying_why(client, rule):
    game = new_game(client, overlays=["agent", "solver", "exact"], **rule)
    for name in ("agent", "solver", "exact"):
        belief = game["beliefs"][name]
        assert belief["mine"] == [[0.0] * 4] * 4, name
        assert belief["note"].startswith("any first click is safe"), name


@pytest.mark.parametrize(
    "method, path, body, status",
    [
        ("post", "/api/games", b"{not json", 400),
        ("post", "/api/games", b"[1, 2]", 400),
        ("post", "/api/games", {"board": "40x30x99"}, 400),
        ("post", "/api/games", {"board": "9x99x5"}, 400),
        ("post", "/api/games", {"board": "8x8x70"}, 400),
        ("post", "/api/games", {"board": "huge"}, 400),
        ("post", "/api/games", {"board": BOARD, "seed": -1}, 400),
        ("post", "/api/games", {"board": BOARD, "colour": "red"}, 400),
        ("post", "/api/games/GAME/move", {"kind": "reveal", "row": 4, "col": 0}, 400),
        ("post", "/api/games/GAME/move", {"kind": "reveal", "row": 0, "col": -1}, 400),
        ("post", "/api/games/GAME/move", {"kind": "dig", "row": 0, "col": 0}, 400),
        ("post", "/api/games/GAME/move", {"kind": "reveal", "row": "a", "col": 0}, 400),
        ("post", "/api/games/GAME/step", {"player": "oracle"}, 400),
        ("post", "/api/games/GAME/step", None, 400),
        ("get", "/api/games/GAME?overlays=mines", None, 400),
        ("get", "/api/games/nosuchgame", None, 404),
        ("post", "/api/games/nosuchgame/step", {"player": "solver"}, 404),
        ("post", "/api/games/OVER/step", {"player": "solver"}, 409),
        ("post", "/api/games/OVER/move", {"kind": "flag", "row": 0, "col": 0}, 409),
    ],
)
def test_bad_request_gets_a_4xx_with_a_one_line_reason(client, method, path, body, status):
    path = path.replace("GAME", new_game(client)["id"])
    if "OVER" in path:
        path = path.replace("OVER", finished_game(client)["id"])
    send = {"content": body, "headers": {"Content-Type": "application/json"}} if isinstance(body, bytes) else {"json": body}
    response = getattr(client, method)(path, **send) if method == "post" else client.get(path)
    assert response.status_code == status, response.text
    reason = response.json()["error"]
    assert reason and "\n" not in reason and "Traceback" not in reason


def test_a_revealed_cell_cannot_be_played_again(client):
    game = new_game(client)
    url = f"/api/games/{game['id']}/move"
    client.post(url, json={"kind": "reveal", "row": 0, "col": 0})
    response = client.post(url, json={"kind": "flag", "row": 0, "col": 0})
    assert response.status_code == 400 and "already revealed" in response.json()["error"]


def test_agent_step_without_an_agent_is_refused():
    inspector = web.Inspector(default_board=BOARD)
    game = inspector.new_game(BOARD, 1, False)
    with pytest.raises(web.GameError, match="--agent"):
        inspector.step(game.game_id, "agent")


def test_serve_without_the_web_extra_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(serve, "missing_packages", lambda: ["fastapi"])
    assert serve.main([]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "pip install -e '.[web]'" in out


def test_serve_refuses_a_board_that_does_not_fit(capsys):
    assert serve.main(["--board", "8x8x70"]) == 2
    assert "mine_count=70" in capsys.readouterr().out
