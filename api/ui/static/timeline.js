// The timeline: the event log over time (lanes per kind, density on a canvas from the server's
// buckets, so a million events cost as little as a hundred), a scrubber that moves every view to a
// revision (`ctx.setRevision`), step to the previous/next event, play at a chosen speed, the events
// around the revision shown as text, the diff of two revisions (diff.js) and, under `cplane replay`,
// the replay's controls (replay.js). Every name shown is text in the DOM; the canvas only draws density.

import { el } from "./dom.js";
import * as diffs from "./diff.js";
import * as replays from "./replay.js";

export const SIM = "/apis/sim.cplane.dev/v1alpha1";
const MAX_LANES = 8; // kinds with a lane of their own; the rest share "other"
const LANE_PX = 12; // height of a lane (CSS pixels)
const AROUND = 12; // events listed before the revision shown (and a few after)
const REFRESH_MS = 2000; // at most one density refresh this often while live (as new events come)
const EVENTS_MS = 300; // at most one read of the events listed this often
const DRAG_MS = 120; // while the scrubber is dragged: load the revision under it after this idle time
const SPEEDS = [1, 2, 5, 10, 25, 100]; // events per second of play

// `pods`, `resourceclaims.resource.k8s.io`: a lane's (and an event's) kind as kubectl names it.
export function kindName(group, resource) {
  return group ? `${resource}.${group}` : resource;
}

function objectName(ev) {
  return ev.namespace ? `${ev.namespace}/${ev.name}` : ev.name;
}

// `by alice (kubectl-edit)`: who made the change, as the event log recorded it.
export function actorText(actor) {
  if (!actor) return "";
  if (typeof actor === "string") return `by ${actor}`;
  const who = actor.user || actor.userAgent || "";
  const manager = actor.fieldManager && actor.fieldManager !== who ? ` (${actor.fieldManager})` : "";
  return who || manager ? `by ${who || "?"}${manager}` : "";
}

function shortTime(text) {
  if (!text) return "";
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) return text;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function addStylesheet() {
  if (document.querySelector('link[data-timeline-css]')) return;
  document.head.append(el("link", { rel: "stylesheet", href: "timeline.css", "data-timeline-css": true }));
}

export function mount(ctx) {
  const root = document.getElementById("timeline");
  if (!root) return;
  addStylesheet();
  const t = {
    first: 1, // the oldest revision one may scrub to
    latest: 0, // the newest revision known
    buckets: [], // the density's buckets
    lanes: [], // [{key, total, color}]
    densityError: "",
    playing: false,
    speed: 5,
    dragTimer: 0,
    requested: undefined, // the revision last asked for by the scrubber
    refreshedAt: 0,
    refreshTimer: 0,
    eventsFor: null, // the revision the events list shows
    picks: [], // revisions picked on the canvas (shift-click) for a diff
    eventlog: `${SIM}/eventlog`, // cluster-wide; one namespace's for a user who may read only that
    width: 0, // the canvas's width in CSS pixels (from a ResizeObserver: never read from the layout)
    drawn: 0, // bumped when the density changes
    drawnKey: "",
    axisKey: "",
  };

  // ---------------------------------------------------------------- the DOM
  const label = el("output", { class: "tl-rv", "aria-live": "polite" });
  const prev = el("button", { type: "button", title: "previous event (step −1)", "data-action": "prev", text: "◀ step" });
  const next = el("button", { type: "button", title: "next event (step +1)", "data-action": "next", text: "step ▶" });
  const play = el("button", { type: "button", "data-action": "play", "aria-pressed": "false", text: "play" });
  const speed = el("select", { title: "events per second", "aria-label": "play speed (events per second)" },
    ...SPEEDS.map((s) => el("option", { value: s, text: `${s}/s`, selected: s === t.speed })));
  const live = el("button", { type: "button", "data-action": "live", title: "follow the newest revision", text: "live" });
  const diffFrom = el("input", { type: "number", min: 0, placeholder: "from", "aria-label": "diff from revision", size: 8 });
  const diffTo = el("input", { type: "number", min: 0, placeholder: "to", "aria-label": "diff to revision", size: 8 });
  const diffForm = el("form", { class: "tl-diff-form", title: "diff of two revisions (or shift-click two points of the chart)" },
    el("span", { text: "diff" }), diffFrom, el("span", { text: ".." }), diffTo,
    el("button", { type: "submit", text: "diff" }));
  const controls = el("div", { class: "tl-controls" }, prev, play, speed, next, live, label, diffForm);

  const lanesList = el("ul", { class: "tl-lanes", "aria-label": "event kinds" });
  const canvas = el("canvas", { class: "tl-canvas", height: LANE_PX, "aria-hidden": "true" });
  const axis = el("div", { class: "tl-axis" });
  const densityNote = el("p", { class: "tl-note", role: "status" });
  const scrubber = el("input", { type: "range", min: 1, max: 1, step: 1, value: 1, "aria-label": "revision" });
  const cursorMark = el("div", { class: "tl-cursor", hidden: true });
  const pickMarks = el("div", { class: "tl-picks" });
  const canvasBox = el("div", { class: "tl-canvas-box" }, canvas, pickMarks, cursorMark);
  const plot = el("div", { class: "tl-plot" }, canvasBox, scrubber, axis);
  const chart = el("div", { class: "tl-chart" }, lanesList, plot);
  const events = el("ol", { class: "tl-events", "aria-label": "events around the revision shown" });
  const diffBox = el("section", { class: "tl-diff", id: "diff", "aria-label": "diff of two revisions", hidden: true });
  const replayBox = el("div", { class: "tl-replay", id: "replay", hidden: true });
  root.replaceChildren(replayBox, controls, chart, densityNote, events, diffBox);

  // ---------------------------------------------------------------- revisions
  const shown = () => (ctx.state.rv === null ? ctx.state.revision : ctx.state.rv);

  function setLatest(rv) {
    if (rv && rv > t.latest) t.latest = rv;
  }

  function go(rv) {
    stopDrag();
    t.requested = rv;
    if (rv === null || (t.latest && rv >= t.latest)) return ctx.setRevision(null);
    return ctx.setRevision(Math.max(rv, t.first));
  }

  function stopDrag() {
    if (t.dragTimer) clearTimeout(t.dragTimer);
    t.dragTimer = 0;
  }

  async function eventlog(query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) params.set(k, String(v));
    return ctx.api.get(`${t.eventlog}?${params}`);
  }

  // The first event after `rv` (null: none yet).
  async function nextRevision(rv) {
    try {
      let since = rv;
      for (;;) { // a page may hold none of the events the user may see yet: its `continue` goes on
        const page = await eventlog({ since, limit: 1 });
        const item = (page.items || [])[0];
        if (item) return item.revision;
        if (!page.continue) return null;
        since = Number(page.continue);
      }
    } catch (error) {
      return rv < t.latest ? rv + 1 : null; // no event log to read: one revision at a time
    }
  }

  // The last event before `rv` (null: none), looking back a growing window.
  async function previousRevision(rv) {
    try {
      for (let width = 16; ; width *= 4) {
        const since = Math.max(0, t.first - 1, rv - 1 - width); // not before the compacted revision (410)
        const page = await eventlog({ since, until: rv - 1, limit: width + 1 });
        const items = page.items || [];
        if (items.length) return items[items.length - 1].revision;
        if (since <= Math.max(0, t.first - 1)) return null;
      }
    } catch (error) {
      return rv > t.first ? rv - 1 : null;
    }
  }

  async function step(direction) {
    stop();
    const from = shown();
    const to = direction > 0 ? await nextRevision(from) : await previousRevision(from);
    if (to === null) {
      if (direction > 0) await go(null);
      return;
    }
    await go(to);
  }

  // ---------------------------------------------------------------- play
  function stop() {
    t.playing = false;
    play.textContent = "play";
    play.setAttribute("aria-pressed", "false");
  }

  async function run() {
    t.playing = true;
    play.textContent = "pause";
    play.setAttribute("aria-pressed", "true");
    let cur = shown();
    if (ctx.state.rv === null) { // playing from live: start from the beginning
      cur = t.first;
      await go(cur);
    }
    while (t.playing) {
      const started = performance.now();
      const nxt = await nextRevision(cur);
      if (!t.playing) break;
      if (nxt === null || nxt >= t.latest) {
        stop();
        await go(null);
        break;
      }
      await go(nxt);
      cur = nxt;
      const wait = 1000 / t.speed - (performance.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  prev.addEventListener("click", () => step(-1).catch(report));
  next.addEventListener("click", () => step(1).catch(report));
  play.addEventListener("click", () => (t.playing ? stop() : run().catch((e) => { stop(); report(e); })));
  speed.addEventListener("change", () => { t.speed = Number(speed.value) || 1; });
  live.addEventListener("click", () => { stop(); go(null).catch(report); });

  // ---------------------------------------------------------------- the scrubber and the canvas
  scrubber.addEventListener("input", () => {
    stop();
    const rv = Number(scrubber.value);
    showLabel(rv);
    drawCursor(rv);
    stopDrag();
    t.dragTimer = setTimeout(() => {
      t.dragTimer = 0;
      if (t.requested !== rv) go(rv).catch(report);
    }, DRAG_MS);
  });
  scrubber.addEventListener("change", () => {
    stop();
    const rv = Number(scrubber.value);
    if (t.requested === rv && !t.dragTimer) return;
    go(rv).catch(report);
  });

  function revisionAt(clientX) {
    const box = canvas.getBoundingClientRect();
    const frac = Math.min(1, Math.max(0, (clientX - box.left) / Math.max(1, box.width)));
    return Math.round(t.first + frac * (t.latest - t.first));
  }

  canvas.addEventListener("click", (event) => {
    const rv = revisionAt(event.clientX);
    if (event.shiftKey) {
      t.picks = [...t.picks.slice(-1), rv];
      if (t.picks.length === 2) {
        const [a, b] = [...t.picks].sort((x, y) => x - y);
        t.picks = [];
        ctx.setParam("diff", `${a}..${b}`, { push: true });
      }
      draw();
      return;
    }
    stop();
    go(rv).catch(report);
  });

  diffForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const a = Number(diffFrom.value);
    const b = Number(diffTo.value);
    if (!Number.isInteger(a) || !Number.isInteger(b) || a <= 0 || b <= 0) return;
    ctx.setParam("diff", `${Math.min(a, b)}..${Math.max(a, b)}`, { push: true });
  });

  function report(error) {
    console.error(error);
    densityNote.textContent = `timeline: ${error.message || error}`;
  }

  // ---------------------------------------------------------------- drawing
  function showLabel(rv) {
    const isLive = ctx.state.rv === null && (rv === undefined || rv >= t.latest);
    const at = rv === undefined ? shown() : rv;
    label.textContent = isLive ? `live · revision ${at}` : `revision ${at} of ${t.latest}`;
    label.dataset.revision = String(at);
  }

  function updateRange() {
    const max = Math.max(t.latest, t.first);
    if (t.axisKey !== `${t.first} ${max}`) {
      t.axisKey = `${t.first} ${max}`;
      renderAxis();
    }
    scrubber.min = String(t.first);
    scrubber.max = String(max);
    if (!t.dragTimer) scrubber.value = String(shown() || max);
    live.disabled = ctx.state.rv === null;
    live.setAttribute("aria-pressed", String(ctx.state.rv === null));
  }

  function xOf(rv, width) {
    const span = Math.max(1, t.latest - t.first);
    return ((rv - t.first) / span) * width;
  }

  // The cursor (the revision shown, or under the scrubber) and the diff's picks: elements placed over
  // the canvas in % of its width, so that moving them neither redraws the density nor reads the layout
  // (which would lay out the whole map again right after it changed).
  function percent(rv) {
    const span = Math.max(1, t.latest - t.first);
    return Math.min(100, Math.max(0, (100 * (rv - t.first)) / span));
  }

  function drawCursor(rv) {
    const at = rv === undefined ? shown() : rv;
    cursorMark.hidden = !at;
    cursorMark.style.left = `${percent(at)}%`;
    cursorMark.dataset.mode = ctx.state.rv === null && rv === undefined ? "live" : "past";
    const picks = `${t.picks} ${t.first} ${t.latest}`;
    if (pickMarks.dataset.picks !== picks) {
      pickMarks.dataset.picks = picks;
      pickMarks.replaceChildren(...t.picks.map((pick) => el("div", { class: "tl-pick", style: `left:${percent(pick)}%` })));
    }
  }

  // The density: redrawn when the buckets or the canvas's size change, not on a scrub.
  function draw(cursor) {
    drawCursor(cursor);
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(100, t.width || 600);
    const lanes = Math.max(1, t.lanes.length);
    const key = `${width} ${lanes} ${ratio} ${t.drawn}`;
    if (t.drawnKey === key) return;
    t.drawnKey = key;
    canvas.style.height = `${lanes * LANE_PX}px`;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(lanes * LANE_PX * ratio);
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, lanes * LANE_PX);
    const index = new Map(t.lanes.map((lane, i) => [lane.key, i]));
    const other = index.get("other");
    let peak = 1;
    const rows = t.buckets.map((b) => {
      const row = new Array(lanes).fill(0);
      for (const [name, n] of Object.entries(b.counts || {})) {
        const i = index.has(name) ? index.get(name) : other;
        if (i !== undefined) row[i] += n;
      }
      for (const n of row) if (n > peak) peak = n;
      return row;
    });
    const scale = Math.log1p(peak);
    t.buckets.forEach((b, bi) => {
      const x0 = xOf(b.from, width);
      const x1 = Math.max(x0 + 1, xOf(b.to, width));
      rows[bi].forEach((n, li) => {
        if (!n) return;
        g.globalAlpha = 0.25 + 0.75 * (Math.log1p(n) / scale);
        g.fillStyle = t.lanes[li].color;
        g.fillRect(x0, li * LANE_PX + 1, x1 - x0, LANE_PX - 2);
      });
    });
    g.globalAlpha = 1;
  }

  function renderLanes() {
    lanesList.replaceChildren(...t.lanes.map((lane) => el("li", { "data-lane": lane.key, title: `${lane.total} events` },
      el("span", { class: "tl-swatch", style: `background:${lane.color}` }), el("span", { text: lane.key }),
      el("span", { class: "tl-count", text: ` ${lane.total}` }))));
  }

  function renderAxis() {
    const ticks = 5;
    const items = [];
    for (let i = 0; i < ticks; i++) {
      const rv = Math.round(t.first + (i / (ticks - 1)) * (t.latest - t.first));
      const bucket = t.buckets.find((b) => b.from <= rv && rv <= b.to);
      const time = bucket ? shortTime(bucket.time) : "";
      items.push(el("span", { class: "tl-tick", style: `left:${(100 * i) / (ticks - 1)}%` },
        el("span", { text: `rv ${rv}` }), time ? el("span", { class: "tl-time", text: time }) : null));
    }
    axis.replaceChildren(...items);
  }

  // ---------------------------------------------------------------- data
  const PALETTE = ["#3b6fd8", "#d8703b", "#2d9d5a", "#a04cc8", "#c8a32a", "#2aa6b5", "#c84c6e", "#6b7a2a", "#888"];

  async function refreshDensity() {
    t.refreshedAt = Date.now();
    const width = Math.max(100, t.width || 600);
    const query = `buckets=${Math.max(20, Math.min(400, Math.round(width / 3)))}`;
    let body;
    try {
      try {
        body = await ctx.api.get(`${t.eventlog}/density?${query}`);
      } catch (error) {
        if (error.status !== 403 || t.eventlog !== `${SIM}/eventlog`) throw error;
        // Refused cluster-wide: the namespace the page shows (as the lists fall back to it).
        const namespace = ctx.params.namespace || Object.values(ctx.state.snapshot.scope || {})[0] || "default";
        t.eventlog = `${SIM}/namespaces/${encodeURIComponent(namespace)}/eventlog`;
        body = await ctx.api.get(`${t.eventlog}/density?${query}`);
      }
    } catch (error) {
      await probeLatest();
      t.densityError = error.message || String(error);
      densityNote.textContent = `event log: ${t.densityError}`;
      t.buckets = [];
      t.drawn += 1;
      t.lanes = [];
      updateRange();
      draw();
      return;
    }
    t.densityError = "";
    densityNote.textContent = "";
    const buckets = body.buckets || [];
    t.buckets = buckets;
    t.drawn += 1;
    // The oldest revision to scrub to: the first retained event (the log's compacted revision + 1).
    if (body.first && body.first.revision) t.first = body.first.revision;
    else if (buckets.length) t.first = Math.max(1, buckets[0].from);
    setLatest(Number(body.revision) || 0);
    const totals = new Map();
    for (const b of buckets) for (const [k, n] of Object.entries(b.counts || {})) totals.set(k, (totals.get(k) || 0) + n);
    const ranked = [...totals.entries()].sort((x, y) => y[1] - x[1]);
    const own = ranked.slice(0, ranked.length > MAX_LANES ? MAX_LANES - 1 : MAX_LANES);
    const rest = ranked.slice(own.length).reduce((sum, [, n]) => sum + n, 0);
    t.lanes = own.map(([key, total], i) => ({ key, total, color: PALETTE[i % PALETTE.length] }));
    if (rest) t.lanes.push({ key: "other", total: rest, color: PALETTE[PALETTE.length - 1] });
    renderLanes();
    t.axisKey = "";
    updateRange();
    showLabel();
    draw();
  }

  // Without the event log's density: the newest revision from a one-item list (if the user may).
  async function probeLatest() {
    try {
      const page = await ctx.api.get("/api/v1/namespaces?limit=1");
      setLatest(Number((page.metadata || {}).resourceVersion) || 0);
    } catch (error) {
      // the newest revision stays the newest seen
    }
  }

  function scheduleRefresh() {
    if (t.refreshTimer) return;
    const wait = Math.max(0, REFRESH_MS - (Date.now() - t.refreshedAt));
    t.refreshTimer = setTimeout(() => {
      t.refreshTimer = 0;
      refreshDensity().catch(report);
    }, wait);
  }

  async function refreshEvents() {
    const rv = shown();
    if (!rv || t.densityError) return;
    t.eventsFor = rv;
    let page;
    try {
      page = await eventlog({ since: Math.max(0, t.first - 1, rv - AROUND), until: rv + 4, limit: AROUND + 4 });
    } catch (error) {
      events.replaceChildren(el("li", { class: "tl-note", text: `events: ${error.message}` }));
      return;
    }
    if (t.eventsFor !== rv) return;
    const items = page.items || [];
    events.replaceChildren(...items.map(eventItem));
    // live, the page's event log watch appends what follows ("logevent"): no more reads
    following = ctx.state.rv === null && rv === ctx.state.revision;
    const mark = markCurrent(rv);
    if (mark) events.scrollTop = Math.max(0, mark.offsetTop - events.clientHeight / 2); // the list only, not the page
  }

  function eventItem(ev) {
    const ref = { group: ev.group || "", resource: ev.resource, namespace: ev.namespace || "", name: ev.name };
    return el("li", { "data-revision": ev.revision },
      el("button", { type: "button", class: "tl-go", title: "show the cluster at this revision", text: String(ev.revision),
        onclick: () => { stop(); go(ev.revision).catch(report); } }),
      el("span", { class: `tl-type tl-${String(ev.type).toLowerCase()}`, text: ev.type }),
      el("span", { class: "tl-kind", text: kindName(ev.group, ev.resource) }),
      el("a", { href: "#", class: "tl-name", text: objectName(ev),
        onclick: (e) => { e.preventDefault(); ctx.openObject(ref); } }),
      el("span", { class: "tl-actor", text: actorText(ev.actor) }),
      el("time", { text: shortTime(ev.time), datetime: ev.time || null }));
  }

  // Mark the last event listed at or before `rv` as the one shown, the later ones as after it (at once
  // when the revision changes; the list itself is read again once the views have rendered).
  function markCurrent(rv) {
    let mark = null;
    for (const li of events.children) {
      const at = Number(li.dataset.revision);
      if (!at) continue;
      li.classList.toggle("tl-after", at > rv);
      li.removeAttribute("aria-current");
      if (at <= rv) mark = li;
    }
    if (mark) mark.setAttribute("aria-current", "true");
    return mark;
  }

  // ---------------------------------------------------------------- following the page
  let eventsTimer = 0;
  let following = false; // live: the events listed are the newest, and each new one is appended as it comes
  function scheduleEvents() {
    if (eventsTimer) return;
    eventsTimer = setTimeout(() => { eventsTimer = 0; refreshEvents().catch(report); }, EVENTS_MS);
  }

  // Live, each event the page's event log watch brings (app.js): appended to the events listed, and
  // the density read again (at most every REFRESH_MS) — nothing is polled.
  ctx.on("logevent", (ev) => {
    if (ctx.state.rv !== null) return;
    if (ev.revision > t.latest) {
      setLatest(ev.revision);
      scheduleRefresh();
    }
    if (!following || t.densityError) return;
    if (events.lastElementChild && Number(events.lastElementChild.dataset.revision) >= ev.revision) return;
    events.append(eventItem(ev));
    while (events.children.length > AROUND + 4) events.firstElementChild.remove();
    t.eventsFor = ev.revision;
    const mark = markCurrent(ev.revision);
    if (mark) events.scrollTop = Math.max(0, mark.offsetTop - events.clientHeight / 2);
  });

  ctx.on("revision", () => {
    following = false;
    updateRange();
    showLabel();
    draw();
    markCurrent(shown());
  });
  ctx.on("snapshot", (state) => {
    if (state.rv === null) {
      const grew = state.revision > t.latest;
      setLatest(state.revision);
      if (grew) scheduleRefresh();
    }
    updateRange();
    showLabel();
    draw();
    if (following) markCurrent(state.revision);
    else scheduleEvents();
  });
  const showDiff = (spec) => {
    const parsed = diffs.parseSpec(spec);
    diffFrom.value = parsed ? String(parsed.a) : "";
    diffTo.value = parsed ? String(parsed.b) : "";
    return diffs.show(ctx, diffBox, spec, { eventlog: t.eventlog }).catch(report);
  };
  ctx.on("params", (params) => showDiff(params.diff));
  new ResizeObserver((entries) => {
    const width = Math.round(entries[entries.length - 1].contentRect.width);
    if (width && width !== t.width) {
      t.width = width;
      draw();
    }
  }).observe(canvasBox);

  // The timeline's own reads start after the first snapshot is shown: the browser's few connections
  // to the server go to the views' lists first.
  let started = false;
  ctx.on("snapshot", () => {
    if (started) return;
    started = true;
    replays.mount(ctx, replayBox, {
      onMove(status) {
        setLatest(status.revision);
        scheduleRefresh();
        go(null).catch(report); // follow the cursor: the views read the replay at its new revision
      },
    }).catch(report);
    refreshDensity().catch(report).then(() => showDiff(ctx.params.diff));
  });
}
