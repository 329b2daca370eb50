// The page's shell: the shared context (`ctx`) every view mounts on, the snapshot of the cluster at
// the revision shown (live: lists, then one watch of the event log keeps it current; past `?rv=`:
// exact lists), the URL parameters, and the render loop (at most one render per animation frame).

import { collectionPath, createApi, currentRef, formatRef, Gone, KINDS, withQuery } from "./api.js";
import * as details from "./details.js";
import * as map from "./map.js";
import * as pending from "./pending.js";
import * as timeline from "./timeline.js";

// The kinds of a snapshot (`ctx.state.snapshot[name]`), read for every revision shown.
const SNAPSHOT_KINDS = ["nodes", "slices", "claims", "pods", "classes", "taintRules", "health"];
// Live, every kind follows ONE watch of the event log (`eventlog?watch=1&objects=…`): a browser keeps
// at most 6 HTTP/1.1 connections to one server, so one stream leaves the others for the page's
// requests (why, details, the timeline).
const SIM = "/apis/sim.cplane.dev/v1alpha1";
const KEPT = ["nodes", "slices"]; // large kinds that seldom change: kept between past revisions when unchanged
const RETRY_MS = 1000; // before reopening a stream that failed (not one the server ended)

function keyOf(obj) {
  const m = obj.metadata || {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

function parseRv(text) {
  if (text === null || text === undefined || text === "") return null;
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : null;
}

function emptySnapshot() {
  const snap = { denied: {}, scope: {} };
  for (const k of SNAPSHOT_KINDS) snap[k] = [];
  return snap;
}

function createContext() {
  const listeners = new Map();
  const emit = (name, ...args) => {
    for (const fn of listeners.get(name) || []) {
      try {
        fn(...args);
      } catch (error) {
        console.error(`${name} listener failed`, error);
      }
    }
  };
  const api = createApi({
    onUnauthorized() {
      if (!location.pathname.startsWith("/ui/login")) {
        location.assign(`/ui/login?next=${encodeURIComponent(location.pathname + location.search)}`);
      }
    },
  });

  const state = { rv: null, revision: 0, snapshot: emptySnapshot(), live: false, loading: true };
  let objects = {}; // kind -> Map(key -> object): the snapshot (live: kept current by the event log's watch)
  let generation = 0; // bumped by each load: stale loads and streams drop their results
  let controller = null; // aborts the current load's requests and its stream
  let frame = 0;
  const dirty = new Set(); // kinds changed since the last publish

  const ctx = {
    api,
    state,
    on(name, fn) {
      if (!listeners.has(name)) listeners.set(name, []);
      listeners.get(name).push(fn);
    },
    emit,
    get params() {
      return Object.fromEntries(new URLSearchParams(location.search));
    },
    // Set (or with a null/empty value remove) one URL parameter; listeners of "params" re-render.
    setParam(name, value, { push = false } = {}) {
      ctx.setParams({ [name]: value }, { push });
    },
    // Show revision `rv` (a number), or live (null): the URL's `rv`, then exact lists, or lists + the event log's watch.
    setRevision(rv) {
      const target = parseRv(rv);
      const loading = load(target); // its requests are on their way before anything else runs
      if (parseRv(ctx.params.rv) !== target) ctx.setParam("rv", target, { push: true });
      return loading;
    },
    // Set several URL parameters at once (null/empty removes one); one "params" event.
    setParams(values, { push = false } = {}) {
      const params = new URLSearchParams(location.search);
      for (const [name, value] of Object.entries(values)) {
        if (value === null || value === undefined || value === "") params.delete(name);
        else params.set(name, String(value));
      }
      const search = params.toString();
      const url = location.pathname + (search ? `?${search}` : "") + location.hash;
      if (push) history.pushState(null, "", url);
      else history.replaceState(null, "", url);
      emit("params", ctx.params);
    },
    // Open the details panel on an object ({group, resource, namespace, name}; a device: its
    // ResourceSlice and `device: "DRIVER/POOL/DEVICE"`): URL parameters `object` (and `device`).
    openObject(ref) {
      ctx.setParams({ object: ref && ref.name ? formatRef(ref) : null, device: (ref && ref.device) || null }, { push: true });
      emit("object", ref);
    },
    closeObject() {
      ctx.setParams({ object: null, device: null }, { push: true });
      emit("object", null);
    },
    // After a write of the page's own: nothing to do, the event log's watch brings it (kept for views).
    refresh() {},
    // The snapshot's objects of one kind as a Map (key "ns/name" or "name").
    index(kind) {
      return objects[kind] || new Map();
    },
  };

  function showMode() {
    const mode = document.getElementById("mode");
    const revision = document.getElementById("revision");
    if (state.loading) {
      mode.dataset.mode = "loading";
      mode.textContent = "loading…";
    } else if (state.rv === null) {
      mode.dataset.mode = "live";
      mode.textContent = "live";
    } else {
      mode.dataset.mode = "past";
      mode.textContent = `past (rv ${state.rv})`;
    }
    revision.textContent = state.revision ? String(state.revision) : "–";
  }

  function publish() {
    frame = 0;
    const snap = emptySnapshot();
    snap.denied = state.snapshot.denied;
    snap.scope = state.snapshot.scope;
    const previous = state.snapshot;
    for (const k of SNAPSHOT_KINDS) {
      // an unchanged kind keeps its array, so views can tell what changed by identity
      snap[k] = dirty.has(k) || !previous[k] ? Array.from((objects[k] || new Map()).values()) : previous[k];
    }
    dirty.clear();
    state.snapshot = snap;
    showMode();
    performance.mark("cplane:views-start");
    emit("snapshot", state);
    document.querySelector("main").dataset.renderedRv = String(state.revision);
    performance.mark("cplane:rendered");
  }

  function schedule(kind) {
    if (kind) dirty.add(kind);
    if (!frame) frame = requestAnimationFrame(publish);
  }

  function status(text) {
    document.getElementById("status").textContent = text || "";
  }

  // One kind's objects at `rv` (or now): cluster-wide, else (403 on a namespaced kind) in the
  // namespace of the URL (or "default"); a list still refused leaves the kind empty, noted in `denied`.
  async function listKind(name, rv, signal, denied, scope) {
    const kind = KINDS[name];
    try {
      return await api.list(collectionPath(kind), { rv, signal });
    } catch (error) {
      if (error.name === "AbortError") throw error;
      if (error.status === 403 && kind.namespaced) {
        const namespace = ctx.params.namespace || "default";
        scope[name] = namespace; // the namespace read instead of all (also when that is refused too)
        try {
          const result = await api.list(collectionPath({ ...kind, namespace }), { rv, signal });
          denied[name] = { message: error.message, partial: true, namespace };
          return result;
        } catch (inner) {
          if (inner.name === "AbortError") throw inner;
          denied[name] = { message: inner.message, status: inner.status, namespace };
          return { items: [], resourceVersion: "" };
        }
      }
      if (error.status === 403 || error.status === 404) {
        denied[name] = { message: error.message, status: error.status };
        return { items: [], resourceVersion: "" };
      }
      throw error;
    }
  }

  async function load(rv) {
    const mine = ++generation;
    if (controller) controller.abort();
    controller = new AbortController();
    const { signal } = controller;
    // From one past revision to another, the large kinds that no event changed in between are kept
    // (the event log's counts per resource say which), not listed again.
    const from = state.rv !== null && !state.loading && rv !== null && rv !== state.rv ? state.rv : null;
    const previous = { objects, denied: state.snapshot.denied, scope: state.snapshot.scope };
    state.rv = rv;
    state.live = rv === null;
    state.loading = true;
    const denied = {};
    const scope = {};
    performance.mark("cplane:lists-start");
    const unchanged = from === null ? Promise.resolve(new Set()) : unchangedKinds(from, rv, signal);
    const lists = Promise.all(SNAPSHOT_KINDS.map(async (k) => {
      if (KEPT.includes(k) && (await unchanged).has(k) && previous.objects[k]) {
        if (previous.denied[k]) denied[k] = previous.denied[k];
        if (previous.scope[k]) scope[k] = previous.scope[k];
        return { items: previous.objects[k].values(), resourceVersion: String(rv) };
      }
      return listKind(k, rv, signal, denied, scope);
    }));
    showMode();
    emit("revision", state);
    let results;
    try {
      results = await lists;
    } catch (error) {
      if (error.name === "AbortError" || mine !== generation) return;
      state.loading = false;
      showMode();
      status(`could not load the cluster: ${error.message}`);
      throw error;
    }
    if (mine !== generation) return;
    performance.mark("cplane:lists-done");
    status("");
    objects = {};
    let revision = rv || 0;
    const versions = {};
    SNAPSHOT_KINDS.forEach((k, i) => {
      const m = new Map();
      for (const item of results[i].items) m.set(keyOf(item), item);
      objects[k] = m;
      versions[k] = results[i].resourceVersion;
      if (rv === null) revision = Math.max(revision, Number(results[i].resourceVersion) || 0);
    });
    state.revision = revision;
    state.loading = false;
    state.snapshot = { ...emptySnapshot(), denied, scope };
    for (const k of SNAPSHOT_KINDS) dirty.add(k);
    if (frame) cancelAnimationFrame(frame);
    publish();
    if (rv === null) {
      // from the oldest list's revision: each kind then skips the events its own list already holds
      const listed = SNAPSHOT_KINDS.map((k) => Number(versions[k]) || 0).filter((n) => n > 0);
      follow(listed.length ? Math.min(...listed) : revision, versions, mine, signal, denied, scope);
    }
  }

  // The kinds of KEPT with no event between revisions a and b: the event log's summaries of that
  // kind in (min, max] are empty (and complete: no `continue`). A failure (403, 410) keeps nothing.
  async function unchangedKinds(a, b, signal) {
    const answers = await Promise.all(KEPT.map(async (k) => {
      const kind = KINDS[k];
      const query = withQuery("/apis/sim.cplane.dev/v1alpha1/eventlog", {
        since: Math.min(a, b), until: Math.max(a, b), group: kind.group, resource: kind.resource, limit: 1 });
      try {
        const page = await api.get(query, { signal });
        return (page.items || []).length === 0 && !page.continue ? k : null;
      } catch (error) {
        return null;
      }
    }));
    return new Set(answers.filter(Boolean));
  }

  // Keep the snapshot current from `from` with one watch of the event log: the summaries of every event
  // the user may see (to the timeline: the "logevent" event), with the objects of the snapshot's kinds.
  // A user who reads one namespace follows that namespace's log. Reopened where it ended; a 410 lists
  // everything again.
  async function follow(from, versions, mine, signal, denied, scope) {
    const byResource = new Map(); // "group/resource" -> snapshot kind
    for (const k of SNAPSHOT_KINDS) {
      if (denied[k] && !denied[k].partial) continue; // not listed: nothing to follow
      byResource.set(`${KINDS[k].group}/${KINDS[k].resource}`, k);
    }
    const objectsParam = SNAPSHOT_KINDS.map((k) => (KINDS[k].group ? `${KINDS[k].resource}.${KINDS[k].group}` : KINDS[k].resource)).join(",");
    const namespace = Object.values(scope)[0] || "";
    let path = namespace ? `${SIM}/namespaces/${encodeURIComponent(namespace)}/eventlog` : `${SIM}/eventlog`;
    let since = from;
    let failed = false;
    while (!signal.aborted && mine === generation) {
      try {
        await api.stream(withQuery(path, { watch: 1, since, objects: objectsParam }), {
          signal,
          onEvent(event) {
            if (mine !== generation) return;
            if (failed) {
              failed = false;
              status("");
            }
            const revision = Number(event.revision) || 0;
            if (revision > since) since = revision;
            if (event.type === "BOOKMARK") {
              if (revision > state.revision) {
                state.revision = revision;
                schedule(null);
              }
              return;
            }
            const { object, ...summary } = event;
            const kind = byResource.get(`${event.group}/${event.resource}`);
            if (kind && object && revision > (Number(versions[kind]) || 0) &&
                !(scope[kind] && event.namespace !== scope[kind])) {
              const key = event.namespace ? `${event.namespace}/${event.name}` : event.name;
              if (event.type === "DELETED") objects[kind].delete(key);
              else objects[kind].set(key, object);
              schedule(kind);
            }
            if (revision > state.revision) {
              state.revision = revision;
              schedule(null);
            }
            emit("logevent", summary);
          },
        });
      } catch (error) {
        if (signal.aborted || mine !== generation) return;
        if (error instanceof Gone) {
          load(null).catch(() => {});
          return;
        }
        if (error.status === 403 && path === `${SIM}/eventlog`) { // refused cluster-wide: the namespace's
          path = `${SIM}/namespaces/${encodeURIComponent(ctx.params.namespace || "default")}/eventlog`;
          continue;
        }
        failed = true;
        status(`live updates (the event log's watch) failed: ${error.message}; retrying`);
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  window.addEventListener("popstate", () => {
    const rv = parseRv(ctx.params.rv);
    emit("params", ctx.params);
    emit("object", currentRef(ctx.params));
    if (rv !== state.rv) load(rv).catch(() => {});
  });

  // A user who may read one namespace only: another `namespace` in the URL reads that one instead.
  ctx.on("params", (params) => {
    const scoped = Object.values(state.snapshot.scope || {});
    if (!state.loading && scoped.length && scoped[0] !== (params.namespace || "default")) load(state.rv).catch(() => {});
  });

  ctx.load = load;
  return ctx;
}

function main() {
  const ctx = createContext();
  window.cplane = ctx; // for the browser tests, the benchmark and the console
  for (const view of [map, pending, details, timeline]) {
    try {
      view.mount(ctx);
    } catch (error) {
      console.error("a view failed to mount", error);
    }
  }
  ctx.load(parseRv(ctx.params.rv)).catch((error) => console.error(error));
}

main();
