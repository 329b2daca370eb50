// The device map (`#map`): every node and its devices from the ResourceSlices, grouped by driver and
// pool, partitions under their counter set (the physical device) with counter usage, consumable
// capacity as used/total, each device free / allocated / tainted / unhealthy; filters (URL
// parameters `node`, `driver`, `class`, `namespace`); the DeviceTaintRules; claims not on a shown
// device. Rendering is a pure function of (snapshot, parameters, permissions) to HTML strings, one
// per node; only nodes whose text changed are replaced in the DOM.

import { buildModel, classDriver, counterText, keyOf, SEVERITY } from "./model.js";

const collator = new Intl.Collator("en", { numeric: true });
const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const NEEDS_ESCAPE = /[&<>"']/;

export function esc(value) {
  const s = String(value ?? "");
  return NEEDS_ESCAPE.test(s) ? s.replace(/[&<>"']/g, (c) => ESCAPES[c]) : s;
}

function globTest(pattern) {
  if (!pattern) return () => true;
  const alternatives = pattern.split(",").map((p) => p.trim()).filter(Boolean);
  const regexes = alternatives.map((p) => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`));
  return (name) => regexes.some((r) => r.test(name));
}

function nsOf(key) {
  const i = key.indexOf("/");
  return i < 0 ? "" : key.slice(0, i);
}

function deviceHtml(dev, namespace) {
  const attrs = [`data-device="${esc(dev.id)}"`, `data-state="${dev.state}"`];
  if (dev.claims.length) attrs.push(`data-claim="${esc(dev.claims.map((c) => c.claim).join(" "))}"`);
  if (dev.effect) attrs.push(`data-taint="${esc(dev.effect)}"`);
  const parts = [`<li class="device s-${dev.state}" ${attrs.join(" ")}>`,
    `<button type="button" class="dev-name" data-open-device="${esc(dev.id)}">${esc(dev.name)}</button> `,
    `<span class="dev-state">${dev.state}</span>`];
  if (dev.claims.length) {
    parts.push(' <span class="dev-claims">claim');
    for (const c of dev.claims) {
      const other = namespace && nsOf(c.claim) !== namespace ? " other-ns" : "";
      parts.push(` <button type="button" class="claim${other}" data-open-claim="${esc(c.claim)}">${esc(c.claim)}</button>`);
    }
    parts.push("</span>");
  }
  if (dev.pods.length) {
    parts.push(' <span class="dev-pods">pods');
    for (const p of dev.pods) parts.push(` <span class="pod" data-pod="${esc(p)}">${esc(p)}</span>`);
    parts.push("</span>");
  }
  for (const t of dev.taints) {
    const taint = t.taint || {};
    parts.push(` <span class="dev-taint">${esc(taint.effect)} ${esc(taint.key)}${taint.value ? `=${esc(taint.value)}` : ""} from ${esc(t.source.kind)} ${esc(t.source.name)}</span>`);
  }
  if (dev.health) {
    const spec = dev.health.spec || {};
    parts.push(` <span class="dev-health">${esc(spec.health)}${spec.message ? `: ${esc(spec.message)}` : ""}</span>`);
  }
  for (const cap of dev.capacity) parts.push(` <span class="dev-cap">${esc(cap.name)} ${esc(cap.text)}</span>`);
  if (dev.blocked) parts.push(` <span class="dev-blocked">counters exhausted: ${esc(dev.blocked)}</span>`);
  parts.push("</li>");
  return parts.join("");
}

function poolHtml(pool, namespace, showDevice) {
  const shown = pool.devices.filter(showDevice);
  if (!shown.length) return "";
  const out = [`<div class="pool" data-pool="${esc(pool.driver)}/${esc(pool.pool)}"><h4><span class="driver">${esc(pool.driver)}</span> · pool <span class="pool-name">${esc(pool.pool)}</span></h4>`];
  const bySet = new Map();
  const plain = [];
  for (const dev of shown) {
    if (dev.set && pool.sets.has(dev.set)) {
      if (!bySet.has(dev.set)) bySet.set(dev.set, []);
      bySet.get(dev.set).push(dev);
    } else plain.push(dev);
  }
  for (const [name, devs] of bySet) {
    const set = pool.sets.get(name);
    const counters = Array.from(set.counters.values()).map((c) => `${esc(c.name)} ${esc(counterText(c))}`).join(", ");
    out.push(`<div class="counterset" data-counter-set="${esc(name)}"><div class="set-head"><span class="set-name">${esc(name)}</span> <span class="counters">${counters}</span></div><ul class="devices">`);
    for (const dev of devs) out.push(deviceHtml(dev, namespace));
    out.push("</ul></div>");
  }
  if (plain.length) {
    out.push('<ul class="devices">');
    for (const dev of plain) out.push(deviceHtml(dev, namespace));
    out.push("</ul>");
  }
  out.push("</div>");
  return out.join("");
}

function nodeReady(node) {
  if (!node) return "";
  const ready = ((node.status || {}).conditions || []).find((c) => c.type === "Ready");
  if ((node.spec || {}).unschedulable) return "cordoned";
  return ready && ready.status === "True" ? "Ready" : "NotReady";
}

function nodeHtml(entry, namespace, showDevice, podsShown) {
  const name = entry.name;
  const out = [];
  const counts = { free: 0, allocated: 0, tainted: 0, unhealthy: 0 };
  const pools = [...entry.pools].sort((a, b) => collator.compare(a.driver, b.driver) || collator.compare(a.pool, b.pool));
  const body = [];
  for (const pool of pools) {
    for (const dev of pool.devices) if (showDevice(dev)) counts[dev.state] += 1;
    body.push(poolHtml(pool, namespace, showDevice));
  }
  if (name) {
    out.push(`<article class="node" data-node="${esc(name)}"><header><h3 class="node-name"><button type="button" data-open-node="${esc(name)}">${esc(name)}</button></h3> <span class="node-ready">${nodeReady(entry.node)}</span>`);
  } else {
    out.push('<article class="node shared" data-shared-pools=""><header><h3 class="node-name">not node-local</h3>');
  }
  out.push(` <span class="node-counts">${counts.free} free, ${counts.allocated} allocated, ${counts.tainted} tainted, ${counts.unhealthy} unhealthy</span></header>`);
  out.push(body.join("") || '<p class="empty">no devices</p>');
  const pods = entry.pods.filter(podsShown);
  if (pods.length) {
    out.push('<div class="node-pods">pods');
    for (const p of pods) out.push(` <button type="button" class="pod" data-open-pod="${esc(p)}">${esc(p)}</button>`);
    out.push("</div>");
  }
  out.push("</article>");
  return { counts, html: out.join("") };
}

function ruleHtml(rule, canDelete) {
  const spec = rule.spec || {};
  const sel = spec.deviceSelector || {};
  const taint = spec.taint || {};
  const what = [sel.driver || "*", sel.pool || "*", sel.device || "*"].join("/");
  const conditions = ((rule.status || {}).conditions || []).map((c) => `${esc(c.type)}=${esc(c.status)}${c.reason ? ` (${esc(c.reason)})` : ""}${c.message ? `: ${esc(c.message)}` : ""}`).join("; ");
  const name = rule.metadata.name;
  return `<li data-taint-rule="${esc(name)}"><button type="button" class="rule-name" data-open-rule="${esc(name)}">${esc(name)}</button> ` +
    `<span class="rule-taint">${esc(taint.key)}${taint.value ? `=${esc(taint.value)}` : ""}:${esc(taint.effect)}</span> on <span class="rule-devices">${esc(what)}</span>` +
    `${conditions ? ` <span class="rule-status">${conditions}</span>` : ""}` +
    `${canDelete ? ` <button type="button" data-write="" data-remove-rule="${esc(name)}">remove</button>` : ""}</li>`;
}

// The map of a snapshot, as HTML strings: {notes, summary, nodes: [{key, html}], rules, claims}.
export function renderMap(snapshot, params, permissions = {}) {
  const model = buildModel(snapshot);
  const notes = [];
  const denied = snapshot.denied || {};
  const kindNames = { nodes: "Nodes", slices: "ResourceSlices", claims: "ResourceClaims", pods: "Pods",
    classes: "DeviceClasses", taintRules: "DeviceTaintRules", health: "DeviceHealth reports" };
  for (const [kind, d] of Object.entries(denied)) {
    if (d.partial) {
      notes.push(`You may not list ${kindNames[kind]} in all namespaces: showing namespace ${d.namespace} only${kind === "claims" ? " (devices allocated to claims elsewhere show as free)" : ""}.`);
    } else if (d.status === 404) {
      notes.push(`${kindNames[kind]} are not served here: not shown.`);
    } else {
      notes.push(`You may not list ${kindNames[kind]}${d.namespace ? ` (not even in namespace ${d.namespace})` : ""}: not shown (${d.message}).`);
    }
  }
  const nodeTest = globTest(params.node);
  let driver = params.driver || "";
  if (params.class) {
    const cls = snapshot.classes.find((c) => c.metadata.name === params.class);
    const selected = cls ? classDriver(cls) : null;
    if (!cls) notes.push(`DeviceClass ${params.class} not found: not filtered by class.`);
    else if (!selected) notes.push(`DeviceClass ${params.class}'s selectors are not a simple \`device.driver == "…"\`: not filtered by class.`);
    else {
      if (!selected.exact) notes.push(`DeviceClass ${params.class}: filtered by its driver ${selected.driver} only (the rest of its CEL selectors is not evaluated here).`);
      if (driver && driver !== selected.driver) notes.push(`Driver ${driver} and class ${params.class} (driver ${selected.driver}) select nothing together.`);
      driver = driver && driver !== selected.driver ? "\u0000" : selected.driver;
    }
  }
  const namespace = params.namespace || "";
  const showDevice = (dev) => !driver || dev.driver === driver;
  const podsShown = (p) => !namespace || nsOf(p) === namespace;

  const entries = Array.from(model.nodes.values()).sort((a, b) => (a.name === "" ? 1 : b.name === "" ? -1 : collator.compare(a.name, b.name)));
  const nodes = [];
  const totals = { free: 0, allocated: 0, tainted: 0, unhealthy: 0 };
  const shownClaims = new Set();
  let hiddenByNamespace = 0;
  for (const entry of entries) {
    if (entry.name && !nodeTest(entry.name)) continue;
    if (!entry.name && params.node) continue;
    if (namespace) {
      const uses = entry.pods.some(podsShown) || entry.pools.some((p) => p.devices.some((d) => showDevice(d) && d.claims.some((c) => nsOf(c.claim) === namespace)));
      if (!uses) {
        hiddenByNamespace += 1;
        continue;
      }
    }
    if (!entry.name && !entry.pools.some((p) => p.devices.some(showDevice))) continue;
    const { counts, html } = nodeHtml(entry, namespace, showDevice, podsShown);
    for (const k of Object.keys(totals)) totals[k] += counts[k];
    for (const pool of entry.pools) for (const d of pool.devices) if (showDevice(d)) for (const c of d.claims) shownClaims.add(c.claim);
    nodes.push({ key: entry.name || "\u0000shared", html });
  }
  if (hiddenByNamespace) notes.push(`${hiddenByNamespace} node(s) hidden: no pod or claim of namespace ${namespace} on them.`);
  const devicesShown = Object.values(totals).reduce((a, b) => a + b, 0);
  const summary = `${nodes.length} node(s), ${devicesShown} device(s): ${totals.free} free, ${totals.allocated} allocated, ${totals.tainted} tainted, ${totals.unhealthy} unhealthy`;

  const rules = [...(snapshot.taintRules || [])].sort((a, b) => collator.compare(a.metadata.name, b.metadata.name));
  const rulesHtml = rules.length
    ? `<h3>DeviceTaintRules</h3><ul class="rules">${rules.map((r) => ruleHtml(r, permissions.deleteRules)).join("")}</ul>` : "";

  const others = [];
  for (const [key, entry] of model.claims) {
    if (shownClaims.has(key) || (namespace && nsOf(key) !== namespace)) continue;
    const what = entry.allocated ? (entry.devices.length ? `allocated: ${entry.devices.join(", ")}` : "allocated") : "not allocated";
    others.push(`<li data-other-claim="${esc(key)}"><button type="button" class="claim" data-open-claim="${esc(key)}">${esc(key)}</button> <span>${esc(what)}</span>` +
      `${entry.pods.length ? ` <span class="dev-pods">pods ${entry.pods.map((p) => `<span class="pod">${esc(p)}</span>`).join(" ")}</span>` : ""}</li>`);
  }
  const claimsHtml = others.length ? `<h3>Claims not on a device shown</h3><ul class="claims">${others.join("")}</ul>` : "";
  return { notes, summary, nodes, rules: rulesHtml, claims: claimsHtml };
}

function setHtml(el, html) {
  if (el.__html !== html) {
    el.innerHTML = html;
    el.__html = html;
  }
}

// Replace only the node elements whose HTML changed (all of them when the list of nodes changed).
function patchNodes(container, nodes) {
  const previous = container.__nodes || [];
  const sameKeys = previous.length === nodes.length && previous.every((n, i) => n.key === nodes[i].key);
  let changed = 0;
  if (sameKeys) for (let i = 0; i < nodes.length; i += 1) if (previous[i].html !== nodes[i].html) changed += 1;
  if (!sameKeys || changed > nodes.length * 0.9) { // (nearly) all changed: one parse of everything
    container.innerHTML = nodes.map((n) => n.html).join("");
  } else {
    const children = container.children;
    for (let i = 0; i < nodes.length; i += 1) {
      if (previous[i].html !== nodes[i].html) {
        const template = document.createElement("template");
        template.innerHTML = nodes[i].html;
        children[i].replaceWith(template.content);
      }
    }
  }
  container.__nodes = nodes;
}

function filtersHtml() {
  return `<h2>Devices</h2>
<form id="map-filters" class="filters" autocomplete="off">
  <label>node <input name="node" list="map-node-names" placeholder="name or glob*" size="14"></label>
  <label>driver <select name="driver"><option value="">all</option></select></label>
  <label>class <select name="class"><option value="">all</option></select></label>
  <label>namespace <input name="namespace" list="map-namespaces" placeholder="all" size="12"></label>
  <datalist id="map-node-names"></datalist><datalist id="map-namespaces"></datalist>
</form>
<div id="map-notes" class="notes"></div>
<p id="map-summary" class="summary"></p>
<div id="map-nodes" class="nodes"></div>
<div id="map-rules"></div>
<div id="map-claims"></div>`;
}

function options(values, selected) {
  return `<option value="">all</option>${values.map((v) => `<option${v === selected ? " selected" : ""}>${esc(v)}</option>`).join("")}`;
}

export function mount(ctx) {
  const section = document.getElementById("map");
  section.innerHTML = filtersHtml();
  const form = section.querySelector("#map-filters");
  const parts = {
    notes: section.querySelector("#map-notes"), summary: section.querySelector("#map-summary"),
    nodes: section.querySelector("#map-nodes"), rules: section.querySelector("#map-rules"),
    claims: section.querySelector("#map-claims"),
    drivers: form.elements.driver, classes: form.elements.class,
    nodeNames: section.querySelector("#map-node-names"), namespaces: section.querySelector("#map-namespaces"),
  };
  const permissions = { createRules: false, deleteRules: false };

  function syncForm(params) {
    for (const name of ["node", "namespace"]) {
      const input = form.elements[name];
      if (document.activeElement !== input) input.value = params[name] || "";
    }
  }

  let last = null; // what the map shows: skip a render when none of it changed

  function render() {
    const snapshot = ctx.state.snapshot;
    const params = ctx.params;
    const filters = JSON.stringify([params.node, params.driver, params.class, params.namespace]);
    const inputs = [snapshot.nodes, snapshot.slices, snapshot.claims, snapshot.pods, snapshot.classes,
      snapshot.taintRules, snapshot.health, snapshot.denied, filters, permissions.deleteRules];
    if (last && inputs.every((v, i) => v === last[i])) return;
    last = inputs;
    const view = renderMap(snapshot, params, permissions);
    setHtml(parts.notes, view.notes.map((n) => `<p class="note" data-note="">${esc(n)}</p>`).join(""));
    parts.summary.textContent = view.summary;
    patchNodes(parts.nodes, view.nodes);
    setHtml(parts.rules, view.rules);
    setHtml(parts.claims, view.claims);
    const drivers = [...new Set(snapshot.slices.map((s) => (s.spec || {}).driver))].sort();
    setHtml(parts.drivers, options(drivers, params.driver || ""));
    parts.drivers.value = params.driver || "";
    setHtml(parts.classes, options(snapshot.classes.map((c) => c.metadata.name).sort(), params.class || ""));
    parts.classes.value = params.class || "";
    setHtml(parts.nodeNames, snapshot.nodes.map((n) => `<option value="${esc(n.metadata.name)}">`).join(""));
    const namespaces = [...new Set([...snapshot.pods, ...snapshot.claims].map((o) => o.metadata.namespace))].sort();
    setHtml(parts.namespaces, namespaces.map((n) => `<option value="${esc(n)}">`).join(""));
    syncForm(params);
  }

  form.addEventListener("change", (event) => {
    const field = event.target;
    if (field.name) ctx.setParam(field.name, field.value.trim());
  });
  form.addEventListener("submit", (event) => event.preventDefault());

  section.addEventListener("click", async (event) => {
    const target = event.target.closest("button");
    if (!target || !section.contains(target)) return;
    const { openDevice, openClaim, openPod, openRule, removeRule, openNode } = target.dataset;
    if (openNode) {
      ctx.openObject({ group: "", resource: "nodes", name: openNode });
    } else if (openDevice) {
      const dev = buildDeviceRef(ctx, openDevice);
      ctx.openObject(dev);
    } else if (openClaim) {
      const [namespace, name] = openClaim.split("/");
      ctx.openObject({ group: "resource.k8s.io", resource: "resourceclaims", namespace, name });
    } else if (openPod) {
      const [namespace, name] = openPod.split("/");
      ctx.openObject({ group: "", resource: "pods", namespace, name });
    } else if (openRule) {
      ctx.openObject({ group: "resource.k8s.io", resource: "devicetaintrules", name: openRule });
    } else if (removeRule) {
      target.disabled = true;
      try {
        await ctx.api.del(`/apis/resource.k8s.io/v1/devicetaintrules/${encodeURIComponent(removeRule)}`);
        ctx.refresh();
      } catch (error) {
        document.getElementById("status").textContent = `could not remove DeviceTaintRule ${removeRule}: ${error.message}`;
        target.disabled = false;
      }
    }
  });

  ctx.on("snapshot", render);
  ctx.on("params", render);
  Promise.all([
    ctx.api.can("create", "resource.k8s.io", "devicetaintrules"),
    ctx.api.can("delete", "resource.k8s.io", "devicetaintrules"),
  ]).then(([create, del]) => {
    permissions.createRules = create;
    permissions.deleteRules = del;
    ctx.permissions = permissions;
    if (del) render();
    document.querySelector("main").dataset.canWrite = create || del ? "yes" : "no"; // decided (tests wait on it)
    ctx.emit("permissions", permissions);
  });
  ctx.permissions = permissions;
}

// The details reference of a device: its ResourceSlice, and the device.
function buildDeviceRef(ctx, id) {
  for (const slice of ctx.state.snapshot.slices) {
    const spec = slice.spec || {};
    if (!id.startsWith(`${spec.driver}/${(spec.pool || {}).name}/`)) continue;
    if ((spec.devices || []).some((d) => id === `${spec.driver}/${spec.pool.name}/${d.name}`)) {
      return { group: "resource.k8s.io", resource: "resourceslices", name: slice.metadata.name, device: id };
    }
  }
  return { group: "resource.k8s.io", resource: "resourceslices", name: "", device: id };
}

export { keyOf, SEVERITY };
