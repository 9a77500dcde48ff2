// msjax inspector: draws the game the server holds and asks it for moves and beliefs.
"use strict";

const $ = (id) => document.getElementById(id);
const page = { info: null, game: null, cells: [], hover: null, autoplay: false, busy: false };
const SCALE = [[26, 152, 80], [145, 207, 96], [254, 224, 139], [252, 141, 89], [215, 48, 39]];

function heatColour(p, alpha = 1) {
  const x = Math.min(Math.max(p, 0), 1) * (SCALE.length - 1);
  const i = Math.min(Math.floor(x), SCALE.length - 2), t = x - i;
  const rgb = SCALE[i].map((c, k) => Math.round(c + t * (SCALE[i + 1][k] - c)));
  return `rgba(${rgb.join(",")},${alpha})`;
}

async function api(method, url, body) {
  page.busy = true; $("busy").hidden = false;
  try {
    const response = await fetch(url, {
      method, headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
    $("error").hidden = true;
    return data;
  } catch (err) {
    showError(err.message); stopAutoplay(); throw err;
  } finally {
    page.busy = false; $("busy").hidden = true;
  }
}

function showError(message) { $("error").textContent = message; $("error").hidden = false; }

// ------------------------------------------------------------------ what to ask for

function heatSource() { return document.querySelector("input[name=heat]:checked").value; }
function player() { return document.querySelector("input[name=player]:checked").value; }

function wantedOverlays() {
  const wanted = new Set();
  if (heatSource()) wanted.add(heatSource());
  if ($("show-top").checked && page.info.agent) wanted.add("agent");
  if ($("show-proven").checked) wanted.add("solver");
  if ($("show-compare").checked) { wanted.add("solver"); wanted.add("exact"); if (page.info.agent) wanted.add("agent"); }
  if ($("show-search").checked) wanted.add("search");
  if (!page.info.agent) wanted.delete("agent");
  return [...wanted];
}

function boardText() {
  const choice = $("board").value;
  return choice === "custom" ? `${$("rows").value}x${$("cols").value}x${$("mines").value}` : choice;
}

// ------------------------------------------------------------------ actions

async function newGame() {
  stopAutoplay();
  const seed = $("seed").value === "" ? null : Number($("seed").value);
  const body = { board: boardText(), seed, safe_first_click: $("first-click").value === "safe", overlays: wantedOverlays() };
  show(await api("POST", "/api/games", body));
}

async function refresh() {
  if (page.game) show(await api("GET", `/api/games/${page.game.id}?overlays=${wantedOverlays().join(",")}`));
}

async function move(kind, row, col) {
  if (!page.game || page.busy || isOver()) return;
  show(await api("POST", `/api/games/${page.game.id}/move`, { kind, row, col, overlays: wantedOverlays() }));
}

async function step() {
  if (!page.game || isOver()) return;
  show(await api("POST", `/api/games/${page.game.id}/step`, { player: player(), overlays: wantedOverlays() }));
}

function isOver() { return page.game && !["new", "playing"].includes(page.game.status); }

function startAutoplay() {
  if (!page.game || isOver()) return;
  page.autoplay = true; $("autoplay").classList.add("on"); $("autoplay").firstChild.textContent = "Stop ";
  autoplayTick();
}

function stopAutoplay() {
  page.autoplay = false; $("autoplay").classList.remove("on"); $("autoplay").firstChild.textContent = "Autoplay ";
}

async function autoplayTick() {
  if (!page.autoplay) return;
  const started = performance.now();
  try { await step(); } catch { return; }
  if (isOver()) { stopAutoplay(); return; }
  const wait = Math.max(0, 1000 / Number($("speed").value) - (performance.now() - started));
  setTimeout(autoplayTick, wait);
}

// ------------------------------------------------------------------ drawing

function buildGrid(game) {
  const grid = $("board-grid");
  grid.innerHTML = "";
  const size = Math.max(20, Math.min(32, Math.floor(900 / game.cols)));
  grid.style.setProperty("--cell", `${size}px`);
  grid.style.gridTemplateColumns = `repeat(${game.cols}, var(--cell))`;
  page.cells = [];
  for (let r = 0; r < game.rows; r++) {
    const row = [];
    for (let c = 0; c < game.cols; c++) {
      const cell = document.createElement("div");
      cell.dataset.row = r; cell.dataset.col = c;
      cell.addEventListener("mouseenter", () => { page.hover = [r, c]; showHover(); });
      grid.appendChild(cell); row.push(cell);
    }
    page.cells.push(row);
  }
  page.shape = `${game.rows}x${game.cols}`;
}

function show(game) {
  if (!page.game || page.shape !== `${game.rows}x${game.cols}` || page.game.id !== game.id) buildGrid(game);
  page.game = game;
  drawBoard(game);
  drawStatus(game);
  drawCompare(game);
  drawSearch(game);
  drawTally(game.tally);
  showHover();
}

function drawBoard(game) {
  const beliefs = game.beliefs;
  const heat = beliefs[heatSource()];
  const proven = new Map();
  if ($("show-proven").checked && beliefs.solver && beliefs.solver.proven)
    for (const p of beliefs.solver.proven) proven.set(`${p.row},${p.col}`, p);
  const top = new Map();
  if ($("show-top").checked && beliefs.agent && beliefs.agent.top)
    beliefs.agent.top.forEach((m, i) => { if (!top.has(`${m.row},${m.col}`)) top.set(`${m.row},${m.col}`, [i + 1, m.kind]); });
  const candidates = new Set();
  if ($("show-search").checked && beliefs.search && beliefs.search.candidates)
    for (const c of beliefs.search.candidates) candidates.add(`${c.row},${c.col}`);
  const last = game.last_move;
  for (let r = 0; r < game.rows; r++) {
    for (let c = 0; c < game.cols; c++) {
      const cell = page.cells[r][c], symbol = game.board[r][c], key = `${r},${c}`;
      const classes = ["cell"];
      let html = "";
      cell.style.background = "";
      if (symbol === "#" || symbol === "F" || symbol === "*" || symbol === "x") {
        classes.push("hidden");
        if (symbol === "F") classes.push("flag");
        if (symbol === "*") classes.push("mine");
        if (symbol === "x") classes.push("wrong");
        const p = heat && heat.mine ? heat.mine[r][c] : null;
        const proof = symbol === "#" ? proven.get(key) : undefined;
        if (symbol === "#" && p !== null && p !== undefined) cell.style.background = heatColour(p, 0.8);
        if (proof) { classes.push(`proven-${proof.kind}`); html += `<span class="layer">L${proof.layer}</span>`; }
        else if (symbol === "#" && p !== null && p !== undefined) html += `<span class="p">${Math.round(p * 100)}</span>`;
        const rank = top.get(key);
        if (rank) html += `<span class="top${rank[1] === "flag" ? " flagmove" : ""}">${rank[0]}</span>`;
        if (symbol === "#" && candidates.has(key)) classes.push("candidate");
      } else if (symbol === "X") {
        classes.push("open", "hit");
      } else {
        classes.push("open");
        if (symbol !== ".") { classes.push(`n${symbol}`); html = symbol; }
      }
      if (last && last.row === r && last.col === c) classes.push("last");
      cell.className = classes.join(" ");
      cell.innerHTML = html;
    }
  }
}

function drawStatus(game) {
  const pill = $("status");
  pill.dataset.status = game.status;
  pill.textContent = { new: "click to start", playing: "playing", won: "won", lost: "lost", "out of moves": "out of moves" }[game.status];
  $("mines-left").textContent = game.status === "won" ? 0 : game.mines - game.flags;
  $("moves").textContent = game.moves;
  $("seed-shown").textContent = game.seed;
  const last = game.last_move;
  let text = "\u00a0";
  if (last) {
    text = `${last.player === "you" ? "You" : last.player === "agent" ? "Agent" : "Solver"}: ${last.kind} (${last.row}, ${last.col})`;
    if (last.layer !== null && last.layer !== undefined) text += ` · layer ${last.layer}, ${last.layer_name}`;
  }
  $("last-move").textContent = text;
}

function drawCompare(game) {
  $("compare").hidden = !$("show-compare").checked;
  if (!$("show-compare").checked) return;
  const size = Math.max(6, Math.min(14, Math.floor(300 / game.cols)));
  for (const name of ["agent", "solver", "exact"]) {
    const canvas = $(`map-${name}`), belief = game.beliefs[name];
    canvas.width = game.cols * size; canvas.height = game.rows * size;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#eef0f3"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    let caption = "";
    if (!belief) caption = name === "agent" && !page.info.agent ? "no agent loaded" : "off";
    else if (belief.unavailable) caption = belief.unavailable.split(":")[0];
    else {
      caption = `${belief.ms} ms${belief.approximate ? " · approximate" : ""}${belief.note ? " · " + belief.note.split(":")[0] : ""}`;
      for (let r = 0; r < game.rows; r++) for (let c = 0; c < game.cols; c++) {
        const symbol = game.board[r][c];
        ctx.fillStyle = symbol === "#" || symbol === "F" ? heatColour(belief.mine[r][c] ?? 0) : "#fbfbfc";
        ctx.fillRect(c * size + 0.5, r * size + 0.5, size - 1, size - 1);
      }
    }
    $(`cap-${name}`).textContent = caption;
  }
}

function drawSearch(game) {
  const search = game.beliefs.search;
  $("search").hidden = !$("show-search").checked;
  if (!$("show-search").checked || !search) return;
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  $("search-note").textContent = search.note || (search.candidates.length ? `${search.ms} ms` : "no guess to search yet");
  const rows = search.candidates.map((c) =>
    `<tr><td>(${c.row}, ${c.col})</td><td>${pct(c.safe)}</td><td>${pct(c.survive)}</td><td>${pct(c.progress)}</td><td>${pct(c.zero)}</td></tr>`).join("");
  $("search-table").innerHTML = rows ? `<tr><th>cell</th><th>safe</th><th>survives 2 guesses</th><th>then a safe cell</th><th>shows 0</th></tr>${rows}` : "";
  const end = search.endgame;
  $("search-endgame").textContent = end
    ? `Endgame: ${end.layouts} layouts left; best play wins ${pct(end.win)}: ` + end.cells.map((c) => `(${c.row}, ${c.col}) ${pct(c.win)}`).join(", ")
    : "";
}

function drawTally(tally) {
  if (!tally.played) { $("tally").textContent = "No finished games yet."; return; }
  const rows = Object.entries(tally.by).map(([who, r]) =>
    `<tr><td>${who}</td><td>${r.won} won</td><td>${r.lost} lost</td></tr>`).join("");
  $("tally").innerHTML = `${tally.won} of ${tally.played} games won<table>${rows}</table>`;
}

function showHover() {
  const game = page.game;
  if (!game || !page.hover || page.hover[0] >= game.rows || page.hover[1] >= game.cols) return;
  const [r, c] = page.hover;
  const parts = [`(${r}, ${c})`];
  for (const name of ["agent", "solver", "exact"]) {
    const belief = game.beliefs[name];
    if (belief && belief.mine && "#F".includes(game.board[r][c])) parts.push(`${name} ${(belief.mine[r][c] ?? NaN).toFixed(2)}`);
  }
  $("hover").textContent = parts.join(" · ");
}

// ------------------------------------------------------------------ wiring

function wire() {
  const grid = $("board-grid");
  grid.addEventListener("click", (e) => {
    const cell = e.target.closest(".cell");
    if (cell && cell.classList.contains("hidden") && !cell.classList.contains("flag"))
      move("reveal", Number(cell.dataset.row), Number(cell.dataset.col)).catch(() => {});
  });
  grid.addEventListener("contextmenu", (e) => {
    e.preventDefault();
    const cell = e.target.closest(".cell");
    if (cell && cell.classList.contains("hidden")) move("flag", Number(cell.dataset.row), Number(cell.dataset.col)).catch(() => {});
  });
  grid.addEventListener("mouseleave", () => { page.hover = null; $("hover").textContent = "\u00a0"; });
  $("new-game").addEventListener("click", () => newGame().catch(() => {}));
  $("step").addEventListener("click", () => step().catch(() => {}));
  $("autoplay").addEventListener("click", () => (page.autoplay ? stopAutoplay() : startAutoplay()));
  $("speed").addEventListener("input", () => { $("speed-label").textContent = `${$("speed").value} moves/s`; });
  $("board").addEventListener("change", () => { $("custom").hidden = $("board").value !== "custom"; });
  for (const input of document.querySelectorAll("input[name=heat], #show-top, #show-proven, #show-compare, #show-search"))
    input.addEventListener("change", () => refresh().catch(() => {}));
  document.addEventListener("keydown", (e) => {
    if (e.target.matches("input, select")) return;
    const key = e.key.toLowerCase();
    if (key === "f" && page.hover) move("flag", page.hover[0], page.hover[1]).catch(() => {});
    else if (key === "s") step().catch(() => {});
    else if (key === "a") page.autoplay ? stopAutoplay() : startAutoplay();
    else if (key === "n") newGame().catch(() => {});
  });
}

async function start() {
  wire();
  page.info = await api("GET", "/api/info");
  if (!page.info.agent) {
    $("player-agent").disabled = true;
    $("player-agent").parentElement.title = "no agent loaded: start the server with --agent RUN";
  }
  const known = [...$("board").options].map((o) => o.value);
  if (known.includes(page.info.default_board)) $("board").value = page.info.default_board;
  else {
    const [rows, cols, mines] = page.info.default_board.split("x");
    $("board").value = "custom"; $("custom").hidden = false;
    $("rows").value = rows; $("cols").value = cols; $("mines").value = mines;
  }
  $("rows").max = page.info.max_rows; $("cols").max = page.info.max_cols;
  await newGame();
}

start().catch(() => {});
