// trending dashboard: reads the public API and renders with plain DOM and SVG. No framework,
// no build step, no network beyond this origin. The live lists come pushed over
// /v1/trending/stream (EventSource) and are polled instead where that is unavailable.
"use strict";

const POLL_MS = 5000;
// A stream that fails this many times in a row without an event gives way to polling, and
// is tried again after STREAM_RETRY_MS.
const STREAM_ERRORS = 3;
const STREAM_RETRY_MS = 60000;
// The served windows come from GET /v1/windows/config (loadWindows); these are the default
// set's, used only when that cannot be read.
let LIVE = [
  ["hour", "Last hour"],
  ["day", "Last 24 hours"],
  ["month", "Last 30 days"],
  ["all", "All time"],
];
let CAL = ["hour", "day", "month"];
// GROUPS is the lists per group value ({by, values, every, max} from /v1/windows/config), or
// null when the deployment keeps none; state.group is the value shown ("" for every item).
let GROUPS = null;
const LIVE_TITLE = { hour: "Last hour", day: "Last 24 hours", month: "Last 30 days", all: "All time" };
const LIST_ROWS = 20;
const BARS = 10;
const CAL_LABEL = { hour: "hours", day: "days", week: "weeks", month: "months" };

// liveTitle names a configured live window: "Last 7 days" for a sliding 7d.
function liveTitle(w) {
  if (LIVE_TITLE[w.name]) return LIVE_TITLE[w.name];
  if (w.kind === "alltime") return "All time";
  if (w.kind === "decayed") return `Trending now (half-life ${w.half_life})`;
  const m = /^(\d+)([mhd])$/.exec(w.length || "");
  if (!m) return w.name;
  const n = Number(m[1]), unit = { m: "minute", h: "hour", d: "day" }[m[2]];
  return n === 1 ? `Last ${unit}` : `Last ${n} ${unit}s`;
}

// loadWindows reads the deployment's windows: the live cards, calendar tabs and
// reconciliation levels are built from them.
async function loadWindows() {
  try {
    const r = await getJSON("/v1/windows/config");
    if (r.status !== 200 || !r.body) return;
    LIVE = r.body.windows.filter((w) => w.kind !== "calendar").map((w) => [w.name, liveTitle(w)]);
    CAL = r.body.calendar;
    GROUPS = r.body.groups || null;
    state.slow = {};
    for (const w of r.body.windows) {
      const m = /^(\d+)d$/.exec(w.length || "");
      if (w.kind === "alltime" || (m && Number(m[1]) > 1)) state.slow[w.name] = true;
    }
  } catch (e) { /* keep the defaults */ }
}

const $ = (id) => document.getElementById(id);
// slow: the live windows that move hourly or slower (longer than a day, or all time).
// gen counts group switches: a stream opened for another group does not reopen itself.
const state = { live: {}, streams: {}, calWindow: "hour", calSelected: null, calPrev: {}, fetchedAt: {}, slow: { month: true, all: true },
  group: "", gen: 0 };

// groupParam is the query parameter of the group shown: "&region=eu", or "" for every item.
function groupParam() {
  return GROUPS && state.group ? `&${GROUPS.by}=${encodeURIComponent(state.group)}` : "";
}

// cardTitle is a live card's title with the group shown: "Last hour · eu".
function cardTitle(title) { return state.group ? `${title} · ${state.group}` : title; }

// el builds an element: el("td", {class: "x"}, "text", child...). Text is always textContent.
function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) n.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) n.append(k instanceof Node ? k : String(k));
  return n;
}
function svg(tag, attrs, ...kids) {
  const n = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
  for (const k of kids) n.append(k instanceof Node ? k : String(k));
  return n;
}

function compact(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(n >= 1e10 ? 0 : 1) + "B";
  if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(0) + "k";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}
const full = (n) => Number(n).toLocaleString("en-US");
function ago(s) {
  s = Math.max(0, Math.round(s));
  if (s < 90) return s + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  if (s < 172800) return Math.round(s / 3600) + " h";
  return Math.round(s / 86400) + " d";
}
const pct = (p) => (p * 100).toFixed(p >= 0.999 ? 2 : 1) + "%";

async function getJSON(url) {
  // no-cache: revalidate with the ETag every poll (a cheap 304) instead of trusting max-age.
  const r = await fetch(url, { cache: "no-cache", headers: { Accept: "application/json" } });
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON */ }
  return { status: r.status, body };
}

// ---- live lists -------------------------------------------------------------------------

function liveCard(win, title) {
  let card = document.querySelector(`.card[data-window="${win}"]`);
  if (!card) {
    card = el("article", { class: "card", "data-window": win },
      el("div", { class: "card-head" }, el("span", { class: "card-title" }, cardTitle(title)),
        el("span", { class: "fresh muted num" }, el("span", { class: "age" }), el("span", { class: "via" }))),
      el("div", { class: "card-meta" }),
      el("div", { class: "bound" }),
      el("div", { class: "chart" }),
      el("div", { class: "scroll" }));
    $("live").append(card);
  }
  return card;
}

// What each list status means (the API's status field).
const STATUS_TIP = {
  live: "live: the speed layer's list of a window still moving; events later than the allowed lateness are not in it",
  provisional: "provisional: the speed layer's final list of a closed window; events that came too late are missing until the batch recomputes it",
  exact: "exact: the batch layer's list, recomputed from the archive; every count equals the truth",
};

function statusBadge(status) {
  return el("span", { class: "badge badge-" + status, title: STATUS_TIP[status] || status }, status);
}

function badges(l) {
  const out = [statusBadge(l.status)];
  if (l.dropped_late > 0) {
    out.push(el("span", { class: "badge badge-late", title: "events of this window that arrived after it closed: not counted here, but in the archive" },
      `${full(l.dropped_late)} late dropped`));
  }
  out.push(el("span", { class: "badge badge-source", title: `computed by the ${l.source} layer · version ${l.version} · at ${l.computed_at}` }, l.source));
  if (l.partial) {
    const parts = (l.stale_partitions || []).join(", ");
    out.push(el("span", { class: "badge badge-partial", title: "some partitions did not report in time" },
      "partial" + (parts ? ": partitions " + parts : "")));
  }
  return out;
}

function boundText(l) {
  if (l.half_life_seconds) {
    const hl = ago(l.half_life_seconds);
    const est = l.error_bound ? `; each score at most +${compact(Math.ceil(l.error_bound.max_overcount))} high, with probability ${pct(l.error_bound.probability)}` : "";
    return `score: each view counts ½ per ${hl} of age, no window edge${est}`;
  }
  if (l.error_bound) {
    return `each count at most +${compact(Math.ceil(l.error_bound.max_overcount))} high, with probability ${pct(l.error_bound.probability)}`;
  }
  if (l.status === "exact") return "exact counts";
  if (l.status === "provisional") {
    return `closed window, not yet recomputed: ${full(l.dropped_late || 0)} events came too late to be counted`;
  }
  return "live counts: events later than the allowed lateness are not in them";
}

// value is what a list ranks by: a decayed list's score, else the views.
const value = (it, decayed) => (decayed ? it.score : it.views);
// scoreText shows a score: one decimal under 100, else as views are shown.
const scoreText = (s) => (s < 100 ? s.toFixed(1) : compact(Math.round(s)));

function barChart(items, sketch, decayed) {
  const top = items.slice(0, BARS);
  const W = 320, rowH = 19, labelW = 92, valW = 44;
  const max = Math.max(decayed ? 0 : 1, ...top.map((i) => value(i, decayed)));
  const what = decayed ? "score" : "views";
  const g = svg("svg", { class: "bars", viewBox: `0 0 ${W} ${Math.max(1, top.length) * rowH}`, role: "img",
    "aria-label": `top ${top.length} by ${what}` });
  top.forEach((it, i) => {
    const y = i * rowH, bw = W - labelW - valW, v = value(it, decayed);
    const label = svg("text", { x: 0, y: y + 13 }, it.item_id.length > 14 ? it.item_id.slice(0, 13) + "…" : it.item_id);
    label.append(svg("title", {}, `${it.item_id}${it.title ? " · " + it.title : ""}: ${decayed ? "score " + v.toFixed(2) : full(v) + " views"}`));
    g.append(label,
      svg("rect", { class: "track", x: labelW, y: y + 3, width: bw, height: rowH - 7, rx: 3 }),
      svg("rect", { class: "bar" + (sketch ? " approx" : ""), x: labelW, y: y + 3, width: Math.max(2, max > 0 ? (bw * v) / max : 0), height: rowH - 7, rx: 3 }),
      svg("text", { class: "val", x: W, y: y + 13, "text-anchor": "end" }, decayed ? scoreText(v) : compact(v)));
  });
  return g;
}

// thumbnail is the item's image when the list carries one (an http(s) or relative URL), hidden
// if it fails to load.
function thumbnail(it) {
  const u = it.thumbnail_url;
  if (!u || !/^(https?:\/\/|\/)/.test(u)) return null;
  const img = el("img", { class: "thumb", src: u, alt: "", loading: "lazy", width: 32, height: 18 });
  img.addEventListener("error", () => { img.hidden = true; });
  return img;
}

// listTable shows "≈" on sketch estimates (never low); other speed counts are counted, but may
// miss late events, which the list's status says. A decayed list shows each item's score
// (its views, each weighted by age), the views it is worth, rounded, in the tooltip.
function listTable(items, rows, sketch, decayed) {
  const t = el("table", { class: "list" });
  for (const it of items.slice(0, rows)) {
    const tip = decayed ? `score ${it.score.toFixed(2)}: worth ${full(it.views)} views now${sketch ? " (estimate: never low)" : ""}`
      : `${full(it.views)} views${sketch ? " (estimate: never low)" : ""}`;
    t.append(el("tr", { "data-item": it.item_id },
      el("td", { class: "rank num" }, it.rank),
      el("td", { title: it.title ? `${it.item_id} · ${it.title}` : it.item_id },
        thumbnail(it), el("span", { class: "id" }, it.item_id), it.title ? el("span", { class: "title" }, it.title) : null),
      el("td", { class: decayed ? "score num" : "views num", title: tip },
        sketch ? el("span", { class: "est" }, "≈") : null, decayed ? scoreText(it.score) : compact(it.views))));
  }
  return t;
}

// renderLive shows a list that came by via ("stream" or "poll"). A poll never replaces the
// version shown with the same or an older one (a stream may have brought it already, and a
// cache on the way may hold an older one); a stream event is always the newest.
function renderLive(win, title, res, via) {
  const card = liveCard(win, title);
  const shown = state.live[win];
  if (via === "poll" && res.status === 200 && res.body && shown && res.body.version <= shown.list.version) return;
  const meta = card.querySelector(".card-meta"), bound = card.querySelector(".bound");
  const chart = card.querySelector(".chart"), scroll = card.querySelector(".scroll");
  if (res.status !== 200 || !res.body) {
    meta.replaceChildren(el("span", { class: "badge badge-missing" }, "no list"));
    bound.textContent = "";
    chart.replaceChildren();
    scroll.replaceChildren(el("div", { class: "empty" },
      res.status === 404 ? (state.group ? `No list yet: no partition has counted an event of ${state.group} in this window.` : "No list yet: the speed layer has not published this window.")
        : `Unavailable (${res.status}): ${(res.body && res.body.detail) || "no answer"}`));
    state.live[win] = null;
    return;
  }
  const l = res.body;
  state.live[win] = { list: l, at: Date.now(), via };
  card.dataset.version = l.version;
  meta.replaceChildren(...badges(l));
  bound.textContent = boundText(l);
  const decayed = !!l.half_life_seconds;
  card.classList.toggle("decayed", decayed);
  chart.replaceChildren(l.items.length ? barChart(l.items, !!l.error_bound, decayed) : el("div", { class: "empty" }, "The list is empty."));
  scroll.replaceChildren(listTable(l.items, LIST_ROWS, !!l.error_bound, decayed));
  tickAges();
}

// tickAges shows each list's freshness, now - as_of, every second: the server's age_seconds
// when the list arrived plus the time since, so a client clock that is off does not matter.
function tickAges() {
  for (const [win] of LIVE) {
    const s = state.live[win], card = document.querySelector(`.card[data-window="${win}"]`);
    if (!card) continue;
    const age = card.querySelector(".age"), via = card.querySelector(".via");
    if (!s) { age.textContent = ""; via.textContent = ""; delete card.dataset.via; continue; }
    card.dataset.via = s.via;
    via.textContent = s.via === "stream" ? " · pushed" : " · polled";
    via.title = s.via === "stream" ? "this version was pushed over /v1/trending/stream" : `this version was polled (every ${POLL_MS / 1000} s while the stream is unavailable)`;
    const secs = s.list.age_seconds + (Date.now() - s.at) / 1000;
    age.textContent = ago(secs) + " old";
    age.title = "as of " + s.list.as_of + " (the newest event counted); version " + s.list.version;
    // The hour list should move every minute and the month every hour (docs/requirements.md).
    age.classList.toggle("stale", secs > (state.slow[win] ? 7200 : 180));
  }
  $("clock").textContent = new Date().toISOString().slice(0, 19).replace("T", " ") + " UTC";
}

// openStream pushes one live list over server-sent events. EventSource reconnects by itself
// (sending the last version as Last-Event-ID, so the server sends only newer ones); after
// STREAM_ERRORS failures without an event, or a refusal (no reconnect), the list is polled.
function openStream(win, title) {
  if (typeof EventSource !== "function") return;
  const gen = state.gen;
  const es = new EventSource(`/v1/trending/stream?window=${win}&limit=${LIST_ROWS}${groupParam()}`);
  const s = { es, open: false, errors: 0 };
  state.streams[win] = s;
  es.onopen = () => { s.open = true; };
  es.onmessage = (ev) => {
    s.open = true;
    s.errors = 0;
    let body = null;
    try { body = JSON.parse(ev.data); } catch (e) { return; }
    renderLive(win, title, { status: 200, body }, "stream");
  };
  es.onerror = () => {
    s.open = false;
    s.errors++;
    if (es.readyState === EventSource.CLOSED || s.errors >= STREAM_ERRORS) {
      es.close();
      if (state.streams[win] === s) delete state.streams[win];
      setTimeout(() => { if (gen === state.gen) openStream(win, title); }, STREAM_RETRY_MS);
    }
  };
}

async function pollLive() {
  await Promise.all(LIVE.map(async ([win, title]) => {
    if (state.streams[win] && state.streams[win].open) return; // pushed
    const gen = state.gen;
    let res;
    try {
      res = await getJSON(`/v1/trending?window=${win}&limit=${LIST_ROWS}${groupParam()}`);
    } catch (e) {
      res = { status: 0, body: { detail: String(e) } };
    }
    if (gen === state.gen) renderLive(win, title, res, "poll"); // not another group's
  }));
}

// ---- readiness --------------------------------------------------------------------------

async function pollReady() {
  const pill = $("ready");
  try {
    const r = await getJSON("/readyz");
    if (r.status === 200) {
      pill.className = "pill pill-ok";
      pill.textContent = "live";
      pill.title = "store reachable; last refresh " + (r.body && r.body.last_refresh);
    } else {
      pill.className = "pill pill-bad";
      pill.textContent = "store unreachable: serving last lists";
      pill.title = (r.body && r.body.detail) || "";
    }
  } catch (e) {
    pill.className = "pill pill-bad";
    pill.textContent = "API unreachable";
    pill.title = String(e);
  }
}

// ---- calendar windows -------------------------------------------------------------------

function tileLabel(win, start) {
  const d = new Date(start);
  const mon = d.toLocaleString("en-US", { month: "short", timeZone: "UTC" });
  if (win === "hour") {
    return [d.toISOString().slice(11, 16), `${mon} ${d.getUTCDate()}`];
  }
  if (win === "day") return [`${mon} ${d.getUTCDate()}`, d.toLocaleString("en-US", { weekday: "short", timeZone: "UTC" })];
  if (win === "week") return [`${mon} ${d.getUTCDate()}`, `week of ${d.getUTCFullYear()}`];
  return [mon, String(d.getUTCFullYear())];
}

function legend(counts) {
  return [
    el("span", { class: "badge badge-exact", title: STATUS_TIP.exact }, `exact ${counts.exact}`),
    el("span", { class: "badge badge-provisional", title: STATUS_TIP.provisional }, `provisional ${counts.provisional}`),
    el("span", { class: "badge badge-live", title: STATUS_TIP.live }, `live ${counts.live}`),
    el("span", { class: "badge badge-missing" }, `missing ${counts.missing}`),
  ];
}

async function pollCalendar() {
  const win = state.calWindow, gen = state.gen;
  let r;
  try { r = await getJSON(`/v1/windows?window=${win}${groupParam()}`); } catch (e) { return; }
  if (win !== state.calWindow || gen !== state.gen) return; // the user switched tabs or groups meanwhile
  const grid = $("cal-grid");
  if (r.status !== 200 || !r.body) {
    grid.replaceChildren(el("div", { class: "empty" }, `Unavailable (${r.status}): ${(r.body && r.body.detail) || ""}`));
    return;
  }
  const ws = r.body.windows.slice().reverse(); // newest first
  $("cal-legend").replaceChildren(...legend(r.body.counts));
  const prev = state.calPrev[win] || {};
  const next = {};
  grid.replaceChildren(...ws.map((w) => {
    const [a, b] = tileLabel(win, w.start);
    const cls = ["tile", w.status, w.open ? "open" : "", state.calSelected === w.start ? "selected" : "",
      prev[w.start] && prev[w.start] !== "exact" && prev[w.start] !== "missing" && w.status === "exact" ? "flash" : ""].filter(Boolean).join(" ");
    next[w.start] = w.status;
    const tip = `${w.start} · ${w.status}${w.open ? " (open)" : ""}` + (w.version ? ` · v${w.version} · ${w.items} items` : "") +
      (w.dropped_late > 0 ? ` · ${w.dropped_late} late dropped` : "") +
      (w.computed_at ? ` · computed ${w.computed_at}` : "");
    const t = el("button", { class: cls, type: "button", title: tip, "data-start": w.start, "data-status": w.status },
      el("span", { class: "t1" }, a), el("span", { class: "t2" }, b));
    t.addEventListener("click", () => selectWindow(w.start));
    return t;
  }));
  state.calPrev[win] = next;
  if (!state.calSelected || !(state.calSelected in next)) {
    const pick = ws.find((w) => w.status !== "missing");
    state.calSelected = pick ? pick.start : null;
  }
  renderDetail(ws.find((w) => w.start === state.calSelected));
}

function selectWindow(start) {
  state.calSelected = start;
  for (const t of document.querySelectorAll(".tile")) t.classList.toggle("selected", t.dataset.start === start);
  pollCalendar();
}

async function renderDetail(w) {
  const box = $("cal-detail");
  if (!w) { box.replaceChildren(el("div", { class: "empty" }, "No computed windows in this range yet.")); return; }
  const win = state.calWindow;
  const head = el("h3", {}, `${CAL_LABEL[win].replace(/s$/, "")} from ${w.start.replace("T", " ").replace(":00Z", " UTC")}` +
    (state.group ? ` · ${state.group}` : ""));
  if (w.status === "missing") {
    box.replaceChildren(el("div", {}, head, el("div", { class: "empty" }, "Nobody computed this window.")));
    return;
  }
  let r;
  try { r = await getJSON(`/v1/trending?window=${win}&start=${encodeURIComponent(w.start)}&limit=10${groupParam()}`); } catch (e) { return; }
  if (state.calSelected !== w.start) return;
  if (r.status !== 200) { box.replaceChildren(el("div", { class: "empty" }, (r.body && r.body.detail) || String(r.status))); return; }
  const l = r.body;
  const facts = el("dl", { class: "kv" });
  const fact = (k, v) => facts.append(el("dt", {}, k), el("dd", {}, v));
  fact("status", statusBadge(l.status));
  fact("source", `${l.source} · version ${l.version}`);
  fact("window", `${l.start} → ${l.end}`);
  fact("computed at", l.computed_at);
  fact("counts", boundText(l));
  if (l.status !== "exact") fact("dropped late", `${full(l.dropped_late || 0)} events arrived after the window closed`);
  if (l.reconciliation) {
    const rc = l.reconciliation;
    fact("speed vs exact", `recall@K ${pct(rc.recall_at_k)} · max error ${full(rc.max_abs_error)} · mean ${rc.mean_abs_error.toFixed(1)} · max relative ${pct(rc.max_rel_error)}`);
  }
  if (l.partial) fact("partial", "stale partitions " + (l.stale_partitions || []).join(", "));
  box.replaceChildren(el("div", {}, head, facts),
    el("div", {}, l.items.length ? barChart(l.items, !!l.error_bound) : el("div", { class: "empty" }, "The list is empty.")));
}

function setupTabs() {
  $("cal-tabs").replaceChildren(...CAL.map((w) => el("button", { class: "tab", role: "tab", type: "button", "data-window": w }, CAL_LABEL[w] || w)));
  if (CAL.length === 0) $("calendar").hidden = true;
  if (!CAL.includes(state.calWindow)) state.calWindow = CAL[0];
  for (const b of document.querySelectorAll("#cal-tabs .tab")) {
    b.setAttribute("aria-selected", String(b.dataset.window === state.calWindow));
    b.addEventListener("click", () => {
      state.calWindow = b.dataset.window;
      state.calSelected = null;
      for (const o of document.querySelectorAll("#cal-tabs .tab")) o.setAttribute("aria-selected", String(o === b));
      pollCalendar();
    });
  }
}

// ---- the group picker ----------------------------------------------------------------------

// setupGroups shows the picker when the deployment keeps lists per group value: "all" and
// each configured value, or a field for any value when every value seen gets lists. The
// group shown is in the page's address (#region=eu), so a view can be shared or bookmarked.
function setupGroups() {
  if (!GROUPS) return;
  const bar = $("group-bar");
  bar.hidden = false;
  $("group-label").textContent = `Lists of ${GROUPS.by}`;
  const want = new URLSearchParams(location.hash.slice(1)).get(GROUPS.by) || "";
  if (GROUPS.every || GROUPS.values.includes(want)) state.group = want;
  const values = GROUPS.every ? [] : GROUPS.values;
  $("groups").replaceChildren(...["", ...values].map((v) => {
    const b = el("button", { class: "tab", role: "tab", type: "button", "data-group": v,
      title: v ? `the lists of ${GROUPS.by} ${v}'s events` : "the lists of every event" }, v || `every ${GROUPS.by}`);
    b.addEventListener("click", () => setGroup(v));
    return b;
  }));
  if (GROUPS.every) {
    const form = $("group-any"), input = $("group-input");
    form.hidden = false;
    input.placeholder = `any ${GROUPS.by} (up to ${GROUPS.max} have lists)`;
    input.value = state.group;
    form.addEventListener("submit", (ev) => { ev.preventDefault(); setGroup(input.value.trim()); });
  }
  markGroup();
}

function markGroup() {
  for (const b of document.querySelectorAll("#groups .tab")) b.setAttribute("aria-selected", String(b.dataset.group === state.group));
  document.body.dataset.group = state.group;
}

// setGroup shows the lists of group value v ("" for every item): the streams reopen for it,
// and every list, calendar window and detail is read again.
function setGroup(v) {
  if (v === state.group) return;
  state.group = v;
  state.gen++;
  history.replaceState(null, "", v ? `#${GROUPS.by}=${encodeURIComponent(v)}` : location.pathname + location.search);
  markGroup();
  for (const s of Object.values(state.streams)) s.es.close();
  state.streams = {};
  state.live = {};
  state.calSelected = null;
  state.calPrev = {};
  for (const [win, title] of LIVE) {
    liveCard(win, title).querySelector(".card-title").textContent = cardTitle(title);
    openStream(win, title);
  }
  pollAll();
}

// ---- reconciliation: the speed layer against the exact lists ---------------------------


function reconCard(lr) {
  const rc = lr.reconciliation;
  let verdict, meter = null;
  if (lr.within_bound === undefined) {
    verdict = el("span", { class: "badge badge-source", title: "the speed list claimed exact counts: no sketch bound to hold it to" }, "no bound");
  } else if (lr.within_bound) {
    verdict = el("span", { class: "badge badge-exact", title: "max error at most the stated max_overcount" }, "within bound");
  } else {
    verdict = el("span", { class: "badge badge-over", title: "max error above the stated max_overcount" }, "over bound");
  }
  let errText = full(rc.max_abs_error);
  if (rc.speed_error_bound) {
    const b = rc.speed_error_bound.max_overcount;
    errText += " / " + compact(Math.ceil(b));
    const ratio = lr.error_over_bound === undefined ? Infinity : lr.error_over_bound;
    const fill = el("span", {});
    fill.style.width = Math.min(100, ratio * 100).toFixed(1) + "%"; // CSSOM: the CSP refuses style attributes
    meter = el("div", { class: "meter" + (lr.within_bound ? "" : " over"), title: `max error ${ratio === Infinity ? "∞" : pct(ratio)} of the bound` }, fill);
  }
  const when = lr.level.startsWith("topics/") || lr.level === "hour"
    ? lr.start.slice(0, 16).replace("T", " ") + " UTC" : lr.start.slice(0, lr.level === "month" ? 7 : 10);
  return el("article", { class: "recon-card", "data-level": lr.level, "data-within": lr.within_bound === undefined ? "none" : String(lr.within_bound) },
    el("div", { class: "recon-head" }, el("span", { class: "recon-level", title: lr.level }, lr.level), verdict),
    el("div", { class: "recon-nums" },
      el("div", { title: "share of the exact top K the speed list also held" }, el("span", { class: "big num recon-recall" }, pct(rc.recall_at_k)), el("span", { class: "lbl" }, "recall@K")),
      el("div", { title: `largest |speed - exact| of an item${rc.speed_error_bound ? " / the stated max_overcount" : ""} · mean ${rc.mean_abs_error.toFixed(1)} · max relative ${pct(rc.max_rel_error)}` },
        el("span", { class: "big num recon-error" }, errText), el("span", { class: "lbl" }, rc.speed_error_bound ? "max error / bound" : "max error"))),
    meter,
    el("div", { class: "recon-when", title: `window ${lr.start} → ${lr.end} · exact version ${lr.version} · computed ${lr.computed_at}` }, "window " + when));
}

async function pollRecon() {
  const box = $("recon");
  let r;
  try { r = await getJSON("/v1/reconciliation"); } catch (e) { return; }
  if (r.status !== 200 || !r.body) {
    box.replaceChildren(el("div", { class: "empty" }, `Unavailable (${r.status}): ${(r.body && r.body.detail) || ""}`));
    return;
  }
  const by = Object.fromEntries(r.body.levels.map((lr) => [lr.level, lr]));
  const cards = CAL.map((lv) => by[lv] ? reconCard(by[lv]) :
    el("article", { class: "recon-card", "data-level": lv, "data-within": "missing" },
      el("div", { class: "recon-head" }, el("span", { class: "recon-level" }, lv), el("span", { class: "badge badge-missing" }, "not reconciled yet")),
      el("div", { class: "recon-when" }, "the batch layer has not replaced a speed list of this level yet")));
  for (const lr of r.body.levels) if (!CAL.includes(lr.level)) cards.push(reconCard(lr));
  box.replaceChildren(...cards);
}

// ---- theme ------------------------------------------------------------------------------

function setupTheme() {
  const saved = localStorage.getItem("trending-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    const next = dark ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    localStorage.setItem("trending-theme", next);
  });
}

function pollAll() {
  return Promise.all([pollLive(), pollRecon(), pollCalendar(), pollReady()]);
}

document.addEventListener("DOMContentLoaded", async () => {
  try { setupTheme(); } catch (e) { /* storage disabled */ }
  await loadWindows();
  setupGroups();
  for (const [win, title] of LIVE) { liveCard(win, title); openStream(win, title); }
  setupTabs();
  pollAll();
  setInterval(pollAll, POLL_MS);
  setInterval(tickAges, 1000);
});
