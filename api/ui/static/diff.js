// The diff of two revisions (`?diff=A..B`), as `cplane log diff` prints it: the objects the events
// between A and B touched, each added, deleted, modified (with its field-level changes: the object
// read at A and at B with exact lists filtered by name) or created and deleted in between. Text only.
// Read with the user's own RBAC: the event log shows the events they may see, the lists what they may read.

import { el } from "./dom.js";

const MAX_EVENTS = 50000; // events read between A and B (beyond: the diff says it is cut)
const MAX_DETAILED = 100; // modified objects whose fields are read and compared
const PARALLEL = 6; // reads at a time
const VALUE_WIDTH = 100; // characters of a value shown before "…"
// Fields every change touches: left out, as `cplane log diff` leaves them out.
const NOISY = new Set(["metadata.resourceVersion", "metadata.managedFields"]);
const LIST_KEYS = ["name", "type", "key", "devicePath", "containerPort", "ip"];
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export function parseSpec(text) {
  const m = /^\s*(\d+)\s*\.\.\s*(\d+)\s*$/.exec(text || "");
  if (!m) return null;
  const a = Number(m[1]);
  const b = Number(m[2]);
  return a <= b ? { a, b } : { a: b, b: a };
}

// ---------------------------------------------------------------- field-level changes

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  return JSON.stringify(value);
}

const same = (a, b) => canonical(a) === canonical(b);

function join(path, key) {
  if (PLAIN_KEY.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

function listKey(before, after) {
  const items = before.concat(after);
  if (!items.length || !items.every(isObject)) return null;
  for (const field of LIST_KEYS) {
    if (!items.every((i) => field in i)) continue;
    const unique = (list) => new Set(list.map((i) => canonical(i[field]))).size === list.length;
    if (unique(before) && unique(after)) return field;
  }
  return null;
}

function itemLabel(path, key, item) {
  const v = item[key];
  return `${path}[${key}=${typeof v === "string" ? v : canonical(v)}]`;
}

function leaves(op, path, value, out) {
  if (NOISY.has(path)) return;
  if (isObject(value) && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) leaves(op, join(path, k), v, out);
    return;
  }
  if (Array.isArray(value) && value.length && value.every(isObject)) {
    const key = listKey(value, []);
    value.forEach((item, i) => leaves(op, key ? itemLabel(path, key, item) : `${path}[${i}]`, item, out));
    return;
  }
  out.push(op === "+" ? { op, path, new: value } : { op, path, old: value });
}

function walk(before, after, path, out) {
  if (NOISY.has(path)) return;
  if (isObject(before) && isObject(after)) {
    for (const k of Object.keys(before)) {
      const p = join(path, k);
      if (k in after) walk(before[k], after[k], p, out);
      else leaves("-", p, before[k], out);
    }
    for (const k of Object.keys(after)) if (!(k in before)) leaves("+", join(path, k), after[k], out);
    return;
  }
  if (Array.isArray(before) && Array.isArray(after) && !same(before, after)) {
    const key = listKey(before, after);
    if (key) {
      const was = new Map(before.map((i) => [canonical(i[key]), i]));
      const now = new Map(after.map((i) => [canonical(i[key]), i]));
      for (const [k, item] of was) {
        if (now.has(k)) walk(item, now.get(k), itemLabel(path, key, item), out);
        else leaves("-", itemLabel(path, key, item), item, out);
      }
      for (const [k, item] of now) if (!was.has(k)) leaves("+", itemLabel(path, key, item), item, out);
      return;
    }
    if (before.length === after.length && before.concat(after).every(isObject)) {
      before.forEach((item, i) => walk(item, after[i], `${path}[${i}]`, out));
      return;
    }
  }
  if (!same(before, after)) out.push({ op: "~", path, old: before, new: after });
}

// A Secret's values are never shown: `***`, or `*** (before)` / `*** (after)` where one changed.
function masked(before, after) {
  const isSecret = (o) => o && o.kind === "Secret" && o.apiVersion === "v1";
  if (!isSecret(before) && !isSecret(after)) return [before, after];
  const a = JSON.parse(JSON.stringify(before || {}));
  const b = JSON.parse(JSON.stringify(after || {}));
  for (const field of ["data", "stringData"]) {
    const x = isObject(a[field]) ? a[field] : {};
    const y = isObject(b[field]) ? b[field] : {};
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
      const changed = k in x && k in y && x[k] !== y[k];
      if (k in x) x[k] = changed ? "*** (before)" : "***";
      if (k in y) y[k] = changed ? "*** (after)" : "***";
    }
  }
  const LAST = "kubectl.kubernetes.io/last-applied-configuration";
  const annotations = (o) => (o.metadata && o.metadata.annotations) || {};
  const sameApplied = annotations(a)[LAST] === annotations(b)[LAST];
  if (LAST in annotations(a)) annotations(a)[LAST] = sameApplied ? "***" : "*** (before)";
  if (LAST in annotations(b)) annotations(b)[LAST] = sameApplied ? "***" : "*** (after)";
  return [a, b];
}

// Field-level changes from `before` to `after` (either may be null), as `cplane log diff` computes them.
export function changes(before, after) {
  const [a, b] = masked(before, after);
  const out = [];
  walk(a || {}, b || {}, "", out);
  return out;
}

export function valueText(value) {
  const text = value === undefined ? "null" : JSON.stringify(value);
  return text.length <= VALUE_WIDTH ? text : `${text.slice(0, VALUE_WIDTH - 1)}…`;
}

export function changeText(c) {
  if (c.op === "+") return `+ ${c.path}: ${valueText(c.new)}`;
  if (c.op === "-") return `- ${c.path}: ${valueText(c.old)}`;
  return `~ ${c.path}: ${valueText(c.old)} → ${valueText(c.new)}`;
}

// ---------------------------------------------------------------- reading

let versions = null; // group -> preferred version, from discovery

async function groupVersion(ctx, group) {
  if (!group) return "v1";
  if (!versions) {
    versions = ctx.api.get("/apis").then((list) => {
      const m = new Map();
      for (const g of list.groups || []) m.set(g.name, (g.preferredVersion || (g.versions || [])[0] || {}).version);
      return m;
    }).catch(() => new Map());
  }
  return (await versions).get(group) || "v1";
}

async function objectAt(ctx, ref, rv) {
  const version = await groupVersion(ctx, ref.group);
  const base = ref.group ? `/apis/${ref.group}/${version}` : `/api/${version}`;
  const path = ref.namespace ? `${base}/namespaces/${encodeURIComponent(ref.namespace)}/${ref.resource}` : `${base}/${ref.resource}`;
  const page = await ctx.api.list(path, { rv, query: { fieldSelector: `metadata.name=${ref.name}` } });
  return (page.items || [])[0] || null;
}

async function eventsBetween(ctx, eventlog, a, b) {
  const out = [];
  let since = a;
  for (;;) { // a page's `continue` is the `since` of the next one
    const params = new URLSearchParams({ since: String(since), until: String(b), limit: "5000" });
    const page = await ctx.api.get(`${eventlog}?${params}`);
    for (const ev of page.items || []) if (ev.revision > a && ev.revision <= b) out.push(ev);
    if (!page.continue || out.length >= MAX_EVENTS) return { events: out, cut: Boolean(page.continue) };
    since = Number(page.continue);
  }
}

async function inParallel(jobs) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, jobs.length) }, worker));
}

// The objects the events between A and B touched, classified (see the module's comment).
export async function compute(ctx, a, b, { eventlog }) {
  const { events, cut } = await eventsBetween(ctx, eventlog, a, b);
  const byKey = new Map();
  for (const ev of events) {
    const ref = { group: ev.group || "", resource: ev.resource, namespace: ev.namespace || "", name: ev.name };
    const key = `${ref.group ? `${ref.resource}.${ref.group}` : ref.resource}/${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
    let entry = byKey.get(key);
    if (!entry) byKey.set(key, entry = { key, ref, first: ev, last: ev, count: 0 });
    entry.last = ev;
    entry.count += 1;
  }
  const entries = [...byKey.values()].sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  for (const e of entries) {
    const atA = e.first.type !== "ADDED";
    const atB = e.last.type !== "DELETED";
    e.change = atA && atB ? "modified" : atB ? "added" : atA ? "deleted" : "transient";
  }
  const modified = entries.filter((e) => e.change === "modified");
  await inParallel(modified.slice(0, MAX_DETAILED).map((e) => async () => {
    try {
      const [before, after] = await Promise.all([objectAt(ctx, e.ref, a), objectAt(ctx, e.ref, b)]);
      e.fields = changes(before, after);
    } catch (error) {
      e.error = error.message || String(error);
    }
  }));
  return { a, b, events: events.length, cut, entries, undetailed: Math.max(0, modified.length - MAX_DETAILED) };
}

// ---------------------------------------------------------------- showing

const MARKS = { added: "+", deleted: "-", modified: "~", transient: "±" };
let shownSpec = null;

// Show the diff `spec` ("A..B"; empty: none) in `box`, reading the events from `eventlog` (its path).
export async function show(ctx, box, spec, { eventlog }) {
  const parsed = parseSpec(spec);
  if (!parsed) {
    shownSpec = null;
    box.hidden = true;
    box.replaceChildren();
    if (spec) {
      box.hidden = false;
      box.replaceChildren(el("p", { class: "tl-note", text: `diff: "${spec}" is not A..B (two revisions)` }));
    }
    return;
  }
  const id = `${parsed.a}..${parsed.b}`;
  if (shownSpec === id) return;
  shownSpec = id;
  box.hidden = false;
  const close = el("button", { type: "button", class: "tl-close", text: "close", onclick: () => ctx.setParam("diff", null, { push: true }) });
  box.replaceChildren(el("h2", { text: `Diff ${id}` }, close), el("p", { class: "tl-note", role: "status", text: "reading…" }));
  box.dataset.diff = id;
  delete box.dataset.ready;
  let result;
  try {
    result = await compute(ctx, parsed.a, parsed.b, { eventlog });
  } catch (error) {
    if (shownSpec !== id) return;
    box.replaceChildren(el("h2", { text: `Diff ${id}` }, close), el("p", { class: "tl-note", text: `diff: ${error.message}` }));
    box.dataset.ready = "error";
    return;
  }
  if (shownSpec !== id) return;
  const count = (c) => result.entries.filter((e) => e.change === c).length;
  const summary = `${result.events} event${result.events === 1 ? "" : "s"}: ${count("added")} added, ${count("deleted")} deleted, ` +
    `${count("modified")} modified` + (count("transient") ? `, ${count("transient")} created and deleted` : "") +
    (result.cut ? ` (the first ${result.events} events only)` : "") +
    (result.undetailed ? `; fields of the first ${MAX_DETAILED} modified objects` : "");
  const list = el("ul", { class: "tl-diff-objects" }, ...result.entries.map((e) => {
    const name = el("a", { href: "#", text: e.key, onclick: (ev) => { ev.preventDefault(); ctx.openObject(e.ref); } });
    const fields = e.fields ? el("ul", { class: "tl-fields" }, ...(e.fields.length ? e.fields.map((c) =>
      el("li", { "data-path": c.path, "data-op": c.op, text: changeText(c) })) : [el("li", { text: "(no field changes)" })])) : null;
    return el("li", { "data-diff-object": e.key, "data-change": e.change },
      el("span", { class: "tl-mark", text: `${MARKS[e.change]} ` }), name,
      el("span", { class: "tl-count", text: ` ${e.change}, ${e.count} event${e.count === 1 ? "" : "s"} (last ${e.last.revision} ${e.last.type})` }),
      e.error ? el("span", { class: "tl-note", text: ` fields: ${e.error}` }) : null, fields);
  }));
  box.replaceChildren(el("h2", { text: `Diff ${id}` }, close), el("p", { class: "tl-summary", text: summary }), list);
  box.dataset.ready = "true";
}
