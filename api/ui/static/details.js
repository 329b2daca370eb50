// The details panel (`#details`): the object the URL's `object` (and `device`) names — its YAML at
// the revision shown, its core/v1 Events, and its history from the event log with field-level
// changes (`eventlog/history`, as `cplane log history` prints). For a device: its entry in the
// ResourceSlice, its state, and (for users who may) "taint device"; for a DeviceTaintRule: "remove".

import { collectionPath, currentRef, objectPath, withQuery } from "./api.js";
import { esc } from "./map.js";
import { buildModel, keyOf } from "./model.js";
import { toYaml } from "./yaml.js";

const SNAPSHOT_OF = { nodes: "nodes", pods: "pods", resourceclaims: "claims", resourceslices: "slices",
  deviceclasses: "classes", devicetaintrules: "taintRules", devicehealths: "health" };
const KIND_OF = { nodes: "Node", pods: "Pod", resourceclaims: "ResourceClaim", resourceslices: "ResourceSlice",
  deviceclasses: "DeviceClass", devicetaintrules: "DeviceTaintRule", devicehealths: "DeviceHealth" };
const UI_TAINT_KEY = "sim.cplane.dev/ui-taint";

function refName(ref) {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

function shortValue(v) {
  if (v === undefined) return "∅";
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function eventsHtml(events) {
  if (!events) return '<p class="loading">loading…</p>';
  if (events.error) return `<p class="note" data-note="">${esc(events.error)}</p>`;
  if (!events.items.length) return '<p class="empty">no events</p>';
  const rows = events.items.map((e) => {
    const when = e.lastTimestamp || e.eventTime || e.firstTimestamp || (e.metadata || {}).creationTimestamp || "";
    const count = e.count && e.count > 1 ? ` ×${e.count}` : "";
    return `<li class="event t-${esc(e.type)}"><time>${esc(when)}</time> <span class="ev-type">${esc(e.type)}</span> <span class="ev-reason">${esc(e.reason)}</span>${count}: ${esc(e.message)}</li>`;
  });
  return `<ul class="events">${rows.join("")}</ul>`;
}

function historyHtml(history) {
  if (!history) return '<p class="loading">loading…</p>';
  if (history.error) return `<p class="note" data-note="">${esc(history.error)}</p>`;
  if (!history.items.length) return '<p class="empty">no history</p>';
  const rows = history.items.map((h) => {
    const changes = (h.changes || []).map((c) => {
      const op = c.op || (c.old === undefined ? "+" : c.new === undefined ? "-" : "~");
      const value = op === "+" ? esc(shortValue(c.new)) : op === "-" ? esc(shortValue(c.old)) : `${esc(shortValue(c.old))} → ${esc(shortValue(c.new))}`;
      return `<li class="change op-${op === "+" ? "add" : op === "-" ? "remove" : "change"}"><span class="op">${esc(op)}</span> <code>${esc(c.path)}</code>: ${value}</li>`;
    }).join("");
    const actor = h.actor && typeof h.actor === "object" ? [h.actor.user, h.actor.fieldManager && `(${h.actor.fieldManager})`].filter(Boolean).join(" ") : h.actor;
    return `<li class="version" data-revision="${esc(h.revision)}"><span class="rev">rv ${esc(h.revision)}</span> <span class="ev-type">${esc(h.type)}</span> <time>${esc(h.time)}</time> <span class="actor">${esc(actor)}</span>${changes ? `<ul class="changes">${changes}</ul>` : ""}</li>`;
  });
  return `<ol class="history">${rows.join("")}</ol>`;
}

function deviceHtml(dev, writable) {
  if (!dev) return '<p class="note" data-note="">This device is not in the ResourceSlices shown.</p>';
  const lines = [`<dl class="device-facts" data-device-details="${esc(dev.id)}">`,
    `<dt>state</dt><dd class="s-${dev.state}">${dev.state}</dd>`,
    `<dt>node</dt><dd>${esc(dev.node || "not node-local")}</dd>`,
    `<dt>slice</dt><dd><button type="button" data-open-slice="${esc(dev.slice)}">${esc(dev.slice)}</button></dd>`];
  if (dev.claims.length) {
    lines.push(`<dt>claims</dt><dd>${dev.claims.map((c) => `<button type="button" class="claim" data-open-claim="${esc(c.claim)}">${esc(c.claim)}</button> (request ${esc(c.request)})`).join(", ")}</dd>`);
  }
  if (dev.pods.length) lines.push(`<dt>pods</dt><dd>${dev.pods.map((p) => `<button type="button" class="pod" data-open-pod="${esc(p)}">${esc(p)}</button>`).join(" ")}</dd>`);
  for (const t of dev.taints) {
    lines.push(`<dt>taint</dt><dd>${esc(t.taint.key)}${t.taint.value ? `=${esc(t.taint.value)}` : ""}:${esc(t.taint.effect)} from ${esc(t.source.kind)} ${t.source.kind === "DeviceTaintRule" ? `<button type="button" data-open-rule="${esc(t.source.name)}">${esc(t.source.name)}</button>` : esc(t.source.name)}</dd>`);
  }
  if (dev.health) lines.push(`<dt>health</dt><dd>${esc(dev.health.spec.health)}${dev.health.spec.message ? `: ${esc(dev.health.spec.message)}` : ""}</dd>`);
  for (const cap of dev.capacity) lines.push(`<dt>${esc(cap.name)}</dt><dd>${esc(cap.text)}</dd>`);
  lines.push("</dl>");
  if (writable) lines.push('<p><button type="button" data-write="" data-taint-device="">taint device (NoSchedule)</button></p>');
  return lines.join("");
}

// Links from a claim to its devices and pods, from a pod to its node and claims.
function relationsHtml(ref, obj) {
  if (!obj) return "";
  const rows = [];
  if (ref.resource === "resourceclaims") {
    const results = (((obj.status || {}).allocation || {}).devices || {}).results || [];
    rows.push(`<dt>allocated</dt><dd>${results.length ? results.map((r) => {
      const id = `${r.driver}/${r.pool}/${r.device}`;
      return `<button type="button" data-open-device="${esc(id)}">${esc(id)}</button>`;
    }).join(" ") : "no"}</dd>`);
    const pods = ((obj.status || {}).reservedFor || []).filter((r) => !r.resource || r.resource === "pods");
    if (pods.length) rows.push(`<dt>reserved for</dt><dd>${pods.map((r) => `<button type="button" class="pod" data-open-pod="${esc(`${ref.namespace}/${r.name}`)}">${esc(`${ref.namespace}/${r.name}`)}</button>`).join(" ")}</dd>`);
  } else if (ref.resource === "pods") {
    const node = (obj.spec || {}).nodeName;
    rows.push(`<dt>node</dt><dd>${esc(node || "not scheduled")}</dd>`);
    const claims = ((obj.status || {}).resourceClaimStatuses || []).filter((c) => c.resourceClaimName);
    if (claims.length) rows.push(`<dt>claims</dt><dd>${claims.map((c) => `<button type="button" class="claim" data-open-claim="${esc(`${ref.namespace}/${c.resourceClaimName}`)}">${esc(`${ref.namespace}/${c.resourceClaimName}`)}</button>`).join(" ")}</dd>`);
  }
  return rows.length ? `<dl class="device-facts">${rows.join("")}</dl>` : "";
}

export function mount(ctx) {
  const panel = document.getElementById("details");
  let ref = null;
  let fetched = { key: "", object: null, events: null, history: null, error: "" };
  let token = 0;

  function key() {
    return ref ? `${ref.group}/${ref.resource}/${refName(ref)}/${ref.device || ""}@${ctx.state.rv ?? "live"}` : "";
  }

  // The object as the snapshot has it (kept current by watches), else as fetched.
  function currentObject() {
    const kind = SNAPSHOT_OF[ref.resource];
    if (kind && (ref.group === "resource.k8s.io" || ref.group === "" || ref.group === "sim.cplane.dev")) {
      const found = ctx.state.snapshot[kind].find((o) => keyOf(o) === refName(ref));
      if (found) return found;
    }
    return fetched.object;
  }

  function render() {
    if (!ref) {
      panel.hidden = true;
      panel.innerHTML = "";
      return;
    }
    panel.hidden = false;
    const kind = KIND_OF[ref.resource] || ref.resource;
    const title = ref.device ? `Device ${ref.device}` : `${kind} ${refName(ref)}`;
    const out = [`<header><h2>${esc(title)}</h2> <button type="button" data-close="">close</button></header>`];
    const live = ctx.state.rv === null;
    let obj = currentObject();
    if (ref.device) {
      const model = buildModel(ctx.state.snapshot);
      const dev = model.devices.get(ref.device);
      out.push(deviceHtml(dev, live && (ctx.permissions || {}).createRules));
      obj = dev ? dev.raw : null;
    } else if (ref.resource === "devicetaintrules" && live && obj && (ctx.permissions || {}).deleteRules) {
      out.push(`<p><button type="button" data-write="" data-remove-rule="${esc(ref.name)}">remove</button></p>`);
    }
    if (!ref.device) out.push(relationsHtml(ref, obj));
    out.push(`<h3>YAML${ref.device ? " (its entry in the ResourceSlice)" : ""}</h3>`);
    if (obj) out.push(`<pre class="yaml">${esc(toYaml(obj))}</pre>`);
    else out.push(`<p class="note" data-note="">${esc(fetched.error || (fetched.key === key() ? "not found at this revision" : "loading…"))}</p>`);
    out.push("<h3>Events</h3>", eventsHtml(fetched.events));
    out.push("<h3>History</h3>", historyHtml(fetched.history));
    const html = out.join("");
    if (panel.__html !== html) {
      panel.innerHTML = html;
      panel.__html = html;
    }
  }

  async function load() {
    if (!ref) return;
    const mine = ++token;
    const k = key();
    const rv = ctx.state.rv;
    const target = ref.device ? { ...ref, name: ref.name } : ref;
    const next = { key: k, object: null, events: { items: [] }, history: { items: [] }, error: "" };
    const tasks = [];
    if (target.name) {
      const nameSelector = `metadata.name=${target.name}`;
      tasks.push(ctx.api.list(collectionPath(target), { rv, query: { fieldSelector: nameSelector } })
        .then((r) => { next.object = r.items[0] || null; })
        .catch((e) => { next.error = `${KIND_OF[target.resource] || target.resource} ${refName(target)}: ${e.message}`; }));
      const selector = [`involvedObject.name=${target.name}`];
      if (target.namespace) selector.push(`involvedObject.namespace=${target.namespace}`);
      tasks.push(ctx.api.list(collectionPath({ group: "", resource: "events", namespace: target.namespace || "" }),
        { rv, query: { fieldSelector: selector.join(",") } })
        .then((r) => { next.events = { items: r.items.filter((e) => !e.involvedObject || !KIND_OF[target.resource] || e.involvedObject.kind === KIND_OF[target.resource]) }; })
        .catch((e) => { next.events = { items: [], error: `events: ${e.message}` }; }));
      // the namespaced path serves a user who may read that namespace only
      const base = target.namespace ? `/apis/sim.cplane.dev/v1alpha1/namespaces/${encodeURIComponent(target.namespace)}` : "/apis/sim.cplane.dev/v1alpha1";
      const history = withQuery(`${base}/eventlog/history`,
        { group: target.group, resource: target.resource, namespace: target.namespace, name: target.name });
      tasks.push(ctx.api.get(history)
        .then((r) => { next.history = { items: (r.items || []).filter((h) => rv === null || Number(h.revision) <= rv) }; })
        .catch((e) => { next.history = { items: [], error: `history: ${e.message}` }; }));
    }
    await Promise.all(tasks);
    if (mine !== token) return;
    fetched = next;
    render();
  }

  function open(newRef) {
    ref = newRef && (newRef.name || newRef.device) ? newRef : null;
    fetched = { key: "", object: null, events: null, history: null, error: "" };
    render();
    load();
  }

  panel.addEventListener("click", async (event) => {
    const target = event.target.closest("button");
    if (!target) return;
    const d = target.dataset;
    if (d.close !== undefined) ctx.closeObject();
    else if (d.openSlice) ctx.openObject({ group: "resource.k8s.io", resource: "resourceslices", name: d.openSlice });
    else if (d.openRule) ctx.openObject({ group: "resource.k8s.io", resource: "devicetaintrules", name: d.openRule });
    else if (d.openDevice) {
      const slice = ctx.state.snapshot.slices.find((sl) => (sl.spec.devices || []).some((dev) => d.openDevice === `${sl.spec.driver}/${sl.spec.pool.name}/${dev.name}`));
      ctx.openObject({ group: "resource.k8s.io", resource: "resourceslices", name: slice ? slice.metadata.name : "", device: d.openDevice });
    }
    else if (d.openClaim) {
      const [namespace, name] = d.openClaim.split("/");
      ctx.openObject({ group: "resource.k8s.io", resource: "resourceclaims", namespace, name });
    } else if (d.openPod) {
      const [namespace, name] = d.openPod.split("/");
      ctx.openObject({ group: "", resource: "pods", namespace, name });
    } else if (d.taintDevice !== undefined && ref && ref.device) {
      const [driver, pool, ...rest] = ref.device.split("/");
      const device = rest.join("/");
      target.disabled = true;
      try {
        await ctx.api.post(collectionPath({ group: "resource.k8s.io", resource: "devicetaintrules" }), {
          apiVersion: "resource.k8s.io/v1", kind: "DeviceTaintRule", metadata: { generateName: "ui-taint-" },
          spec: { deviceSelector: { driver, pool, device }, taint: { key: UI_TAINT_KEY, value: "true", effect: "NoSchedule" } },
        });
        ctx.refresh();
      } catch (error) {
        document.getElementById("status").textContent = `could not taint ${ref.device}: ${error.message}`;
      }
      target.disabled = false;
    } else if (d.removeRule) {
      target.disabled = true;
      try {
        await ctx.api.del(objectPath({ group: "resource.k8s.io", resource: "devicetaintrules", name: d.removeRule }));
        ctx.refresh();
      } catch (error) {
        document.getElementById("status").textContent = `could not remove ${d.removeRule}: ${error.message}`;
        target.disabled = false;
      }
    }
  });

  ctx.on("object", open);
  ctx.on("snapshot", render);
  ctx.on("permissions", render);
  ctx.on("revision", () => {
    if (ref) {
      fetched = { ...fetched, key: "" };
      load();
    }
  });
  open(currentRef(ctx.params));
}
