// The diff of two revisions (`?diff=A..B`), as `cplane log diff` prints it: the objects the events
// between A and B touched, each added, deleted, modified (with its field-level changes) or created and
// deleted in between. The server computes it (`eventlog/diff`, with the user's own RBAC); this shows it
// as text.

import { el } from "./dom.js";

const VALUE_WIDTH = 100; // characters of a value shown before "…"

export function parseSpec(text) {
  const m = /^\s*(\d+)\s*\.\.\s*(\d+)\s*$/.exec(text || "");
  if (!m) return null;
  const a = Number(m[1]);
  const b = Number(m[2]);
  return a <= b ? { a, b } : { a: b, b: a };
}

function valueText(value) {
  const text = value === undefined || value === null ? "null" : JSON.stringify(value);
  return text.length <= VALUE_WIDTH ? text : `${text.slice(0, VALUE_WIDTH - 1)}…`;
}

function changeText(c) {
  if (c.op === "+") return `+ ${c.path}: ${valueText(c.new)}`;
  if (c.op === "-") return `- ${c.path}: ${valueText(c.old)}`;
  return `~ ${c.path}: ${valueText(c.old)} → ${valueText(c.new)}`;
}

// ---------------------------------------------------------------- reading

// The server's diff (`eventlog/diff`: the objects, their classes and field-level changes, computed
// by `cp.changes` as `cplane log diff` and the history do), as the list below shows it.
async function compute(ctx, a, b, { eventlog }) {
  const params = new URLSearchParams({ since: String(a), until: String(b) });
  const result = await ctx.api.get(`${eventlog}/diff?${params}`);
  const entries = (result.items || []).map((item) => {
    const ref = { group: item.group || "", resource: item.resource, namespace: item.namespace || "", name: item.name };
    const key = `${ref.group ? `${ref.resource}.${ref.group}` : ref.resource}/${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
    return { key, ref, change: item.change, count: item.count, last: item.last, fields: item.changes };
  });
  return { a, b, events: result.events, cut: result.cut, entries, undetailed: result.undetailed };
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
    (result.undetailed ? `; fields of the first ${count("modified") - result.undetailed} modified objects` : "");
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
