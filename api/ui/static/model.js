// The device map's model, a pure function of a snapshot: every device of the ResourceSlices with
// its node, pool and counter set, and what the claims, DeviceTaintRules and DeviceHealth reports say
// about it (allocated to which claims and pods, tainted by what, unhealthy); counter and capacity
// usage from the allocated devices.

import { formatQuantity, parseQuantity } from "./quantity.js";

export const SEVERITY = { free: 0, allocated: 1, tainted: 2, unhealthy: 3 };
const EFFECTS = { None: 0, NoSchedule: 1, NoExecute: 2 };

export function keyOf(obj) {
  const m = obj.metadata || {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

export function deviceId(driver, pool, device) {
  return `${driver}/${pool}/${device}`;
}

function allocationResults(claim) {
  return (((claim.status || {}).allocation || {}).devices || {}).results || [];
}

function usedBy(claim) {
  const ns = (claim.metadata || {}).namespace || "";
  return ((claim.status || {}).reservedFor || [])
    .filter((r) => !r.resource || r.resource === "pods")
    .map((r) => `${ns}/${r.name}`);
}

// Which devices a DeviceTaintRule selects: its deviceSelector's driver, pool and device (each
// absent = any), as the allocator reads it.
export function ruleMatches(rule, driver, pool, device) {
  const sel = (rule.spec || {}).deviceSelector;
  if (!sel) return true;
  return (!sel.driver || sel.driver === driver) && (!sel.pool || sel.pool === pool) && (!sel.device || sel.device === device);
}

// The driver a DeviceClass selects, when its first CEL selector says `device.driver == "X"`; null
// when the class's selectors say something else (the map cannot evaluate CEL).
export function classDriver(cls) {
  for (const sel of (cls.spec || {}).selectors || []) {
    const expr = (sel.cel || {}).expression || "";
    const m = /device\.driver\s*==\s*["']([^"']+)["']/.exec(expr);
    if (m) return { driver: m[1], exact: /^\s*device\.driver\s*==\s*["'][^"']+["']\s*$/.test(expr) };
  }
  return null;
}

export function buildModel(snapshot) {
  // Claims: who holds each device
  const holders = new Map(); // device id -> [{claim, request, consumed}]
  const claims = new Map(); // claim key -> {claim, key, devices, pods}
  for (const claim of snapshot.claims) {
    const key = keyOf(claim);
    const entry = { claim, key, devices: [], pods: usedBy(claim), allocated: Boolean((claim.status || {}).allocation) };
    claims.set(key, entry);
    for (const r of allocationResults(claim)) {
      const id = deviceId(r.driver, r.pool, r.device);
      entry.devices.push(id);
      if (!holders.has(id)) holders.set(id, []);
      holders.get(id).push({ claim: key, request: r.request, consumed: r.consumedCapacity || null });
    }
  }

  const unhealthy = new Map(); // device id -> the DeviceHealth report
  for (const report of snapshot.health || []) {
    const spec = report.spec || {};
    if (spec.health === "Unhealthy") unhealthy.set(deviceId(spec.driver, spec.pool, spec.device), report);
  }

  // Slices of each pool's newest generation
  const newest = new Map();
  for (const slice of snapshot.slices) {
    const spec = slice.spec || {};
    const pk = `${spec.driver}/${(spec.pool || {}).name}`;
    newest.set(pk, Math.max(newest.get(pk) ?? -1, Number((spec.pool || {}).generation) || 0));
  }

  const pools = new Map(); // "node|driver/pool" -> pool entry
  const counterSets = new Map(); // "driver/pool" -> Map(set name -> {name, counters: Map(name -> {total, used, text})})
  const devices = new Map();
  const nodes = new Map(); // node name ("" = not node-local) -> {name, pools: []}
  const nodeEntry = (name) => {
    if (!nodes.has(name)) nodes.set(name, { name, node: null, pools: [], pods: [] });
    return nodes.get(name);
  };
  for (const n of snapshot.nodes) nodeEntry(n.metadata.name).node = n;

  const rules = snapshot.taintRules || [];
  const sorted = [...snapshot.slices].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0))
    .filter((slice) => {
      const spec = slice.spec || {};
      const pk = `${spec.driver}/${(spec.pool || {}).name}`;
      return (Number((spec.pool || {}).generation) || 0) >= newest.get(pk); // not an obsolete generation
    });
  // the pools' counter sets first (a pool may publish them in a slice of their own)
  for (const slice of sorted) {
    const spec = slice.spec || {};
    const pk = `${spec.driver}/${(spec.pool || {}).name || ""}`;
    if (!counterSets.has(pk)) counterSets.set(pk, new Map());
    for (const cs of spec.sharedCounters || []) {
      const counters = new Map();
      for (const [name, c] of Object.entries(cs.counters || {})) {
        counters.set(name, { name, total: parseQuantity((c || {}).value), used: 0, text: (c || {}).value });
      }
      counterSets.get(pk).set(cs.name, { name: cs.name, counters, devices: [] });
    }
  }
  for (const slice of sorted) {
    const spec = slice.spec || {};
    const poolName = (spec.pool || {}).name || "";
    const pk = `${spec.driver}/${poolName}`;
    const sets = counterSets.get(pk);
    for (const raw of spec.devices || []) {
      const node = spec.nodeName || raw.nodeName || "";
      const key = `${node}|${pk}`;
      if (!pools.has(key)) {
        const pool = { key, driver: spec.driver, pool: poolName, node, slices: [], devices: [], sets };
        pools.set(key, pool);
        nodeEntry(node).pools.push(pool);
      }
      const pool = pools.get(key);
      if (!pool.slices.includes(slice.metadata.name)) pool.slices.push(slice.metadata.name);
      const id = deviceId(spec.driver, poolName, raw.name);
      const taints = [];
      for (const taint of raw.taints || []) taints.push({ taint, source: { kind: "ResourceSlice", name: slice.metadata.name } });
      for (const rule of rules) {
        if (ruleMatches(rule, spec.driver, poolName, raw.name) && (rule.spec || {}).taint) {
          taints.push({ taint: rule.spec.taint, source: { kind: "DeviceTaintRule", name: rule.metadata.name } });
        }
      }
      const held = holders.get(id) || [];
      const health = unhealthy.get(id) || null;
      let state = "free";
      if (health) state = "unhealthy";
      else if (taints.length) state = "tainted";
      else if (held.length) state = "allocated";
      let effect = "";
      for (const t of taints) if (!effect || (EFFECTS[t.taint.effect] ?? 0) > (EFFECTS[effect] ?? 0)) effect = t.taint.effect;
      const pods = [];
      for (const h of held) for (const p of (claims.get(h.claim) || { pods: [] }).pods) if (!pods.includes(p)) pods.push(p);
      const dev = {
        id, driver: spec.driver, pool: poolName, name: raw.name, node, slice: slice.metadata.name, raw,
        state, effect, claims: held, pods, taints, health, capacity: [], set: null,
      };
      const consumes = raw.consumesCounters || [];
      if (consumes.length) dev.set = consumes[0].counterSet;
      if (held.length) {
        for (const cc of consumes) {
          const set = sets.get(cc.counterSet);
          if (!set) continue;
          for (const [name, c] of Object.entries(cc.counters || {})) {
            const counter = set.counters.get(name);
            if (counter) counter.used += parseQuantity((c || {}).value);
          }
        }
      }
      if (raw.allowMultipleAllocations) {
        for (const [name, cap] of Object.entries(raw.capacity || {})) {
          if (!cap || !cap.requestPolicy) continue;
          let used = 0;
          for (const h of held) used += parseQuantity((h.consumed || {})[name] ?? 0) || 0;
          const total = parseQuantity(cap.value);
          dev.capacity.push({ name, used, total, text: `${formatQuantity(used, cap.value)}/${cap.value}` });
        }
      }
      devices.set(id, dev);
      pool.devices.push(dev);
    }
  }
  // a free device that consumes more of a counter than is left cannot be allocated now: say which
  for (const dev of devices.values()) {
    if (dev.state !== "free" || !dev.raw.consumesCounters) continue;
    const sets = counterSets.get(`${dev.driver}/${dev.pool}`);
    const short = [];
    for (const cc of dev.raw.consumesCounters) {
      const set = sets && sets.get(cc.counterSet);
      if (!set) continue;
      for (const [name, c] of Object.entries(cc.counters || {})) {
        const counter = set.counters.get(name);
        const need = parseQuantity((c || {}).value);
        if (counter && need > counter.total - counter.used) {
          short.push(`${name} ${(c || {}).value} needed, ${formatQuantity(counter.total - counter.used, counter.text)} left`);
        }
      }
    }
    if (short.length) dev.blocked = short.join(", ");
  }
  // counter sets' devices (partitions under their physical device)
  for (const pool of pools.values()) {
    for (const dev of pool.devices) {
      if (dev.set && pool.sets.has(dev.set)) {
        const set = pool.sets.get(dev.set);
        if (!set.devices.includes(dev)) set.devices.push(dev);
      }
    }
  }
  for (const pod of snapshot.pods) {
    const nodeName = (pod.spec || {}).nodeName;
    if (nodeName) nodeEntry(nodeName).pods.push(keyOf(pod));
  }
  return { devices, pools, nodes, claims, counterSets, holders };
}

// "30Gi/80Gi" for one counter
export function counterText(counter) {
  return `${formatQuantity(counter.used, counter.text)}/${counter.text}`;
}
