// The page's data layer: JSON reads of the Kubernetes API with the user's own credentials (the
// `cplane-token` cookie, or whatever the browser sends), paged lists (exact at a revision when asked),
// watches and the event log's watch streamed as JSON lines, writes with the UI's CSRF header, and SelfSubjectAccessReviews.

// Items per page of a list: large, since every page is one more round trip before the view can render
// (the server streams a list as it encodes it; 5,000 pods are a few megabytes).
const PAGE = 5000;

// An API error: `status` is the HTTP code, `message` the Status message.
export class ApiError extends Error {
  constructor(status, message, reason) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.reason = reason || "";
  }
}

// Thrown by a watch that the server ended with 410 Gone (the revision was compacted): relist.
export class Gone extends ApiError {}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  let reason = "";
  try {
    const body = await response.json();
    if (body && body.message) message = body.message;
    if (body && body.reason) reason = body.reason;
  } catch (e) {
    // not a Status body
  }
  const Kind = response.status === 410 ? Gone : ApiError;
  return new Kind(response.status, message, reason);
}

export function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const text = params.toString();
  if (!text) return path;
  return path + (path.includes("?") ? "&" : "?") + text;
}

export function createApi({ onUnauthorized } = {}) {
  const decisions = new Map(); // "verb group resource namespace" -> Promise<bool>

  async function request(method, path, { body, signal } = {}) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") headers["X-Cplane-UI"] = "1"; // the UI's CSRF rule (docs/security.md)
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method, headers, signal, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401 && onUnauthorized) onUnauthorized();
    if (!response.ok) throw await failure(response);
    return response.status === 204 ? null : response.json();
  }

  const api = {
    get: (path, options) => request("GET", path, options),
    post: (path, body, options) => request("POST", path, { ...options, body }),
    del: (path, options) => request("DELETE", path, options),

    // Every item of a list, paged; `rv`: exactly at that revision.
    async list(path, { rv = null, signal, query = {} } = {}) {
      const items = [];
      let token = "";
      let resourceVersion = "";
      for (;;) {
        const q = { ...query, limit: PAGE };
        if (token) q.continue = token;
        else if (rv !== null && rv !== undefined) {
          q.resourceVersion = rv;
          q.resourceVersionMatch = "Exact";
        }
        const page = await request("GET", withQuery(path, q), { signal });
        for (const item of page.items || []) items.push(item);
        resourceVersion = (page.metadata && page.metadata.resourceVersion) || resourceVersion;
        token = page.metadata && page.metadata.continue;
        if (!token) break;
      }
      return { items, resourceVersion };
    },

    // Watch from `resourceVersion`, calling onEvent({type, object}) per event (bookmarks included),
    // until the server ends the stream (resolves) or `signal` aborts (rejects with AbortError).
    // A 410, as a status or as an ERROR event, rejects with Gone.
    watch(path, { resourceVersion, onEvent, signal }) {
      return api.stream(withQuery(path, { watch: 1, resourceVersion, allowWatchBookmarks: "true" }), { onEvent, signal });
    },

    // Read a stream of JSON lines (a watch, the event log's watch), calling onEvent per line, until the
    // server ends it (resolves) or `signal` aborts (rejects with AbortError). An ERROR line rejects
    // with its Status (Gone for a 410), as does a refused request.
    async stream(url, { onEvent, signal }) {
      const response = await fetch(url, { headers: { Accept: "application/json" }, signal, credentials: "same-origin" });
      if (response.status === 401 && onUnauthorized) onUnauthorized();
      if (!response.ok) throw await failure(response);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffered += value;
          let newline;
          while ((newline = buffered.indexOf("\n")) >= 0) {
            const line = buffered.slice(0, newline).trim();
            buffered = buffered.slice(newline + 1);
            if (!line) continue;
            const event = JSON.parse(line);
            if (event.type === "ERROR") {
              const status = (event.object && event.object.code) || 500;
              const Kind = status === 410 ? Gone : ApiError;
              throw new Kind(status, event.object && event.object.message);
            }
            onEvent(event);
          }
        }
      } finally {
        reader.cancel().catch(() => {});
      }
    },

    // May the user `verb` the resource? A SelfSubjectAccessReview, asked once per question.
    can(verb, group, resource, namespace = "") {
      const key = `${verb} ${group} ${resource} ${namespace}`;
      if (!decisions.has(key)) {
        const review = {
          apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview",
          spec: { resourceAttributes: { verb, group, resource, namespace } },
        };
        decisions.set(key, request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", { body: review })
          .then((r) => Boolean(r && r.status && r.status.allowed))
          .catch(() => false));
      }
      return decisions.get(key);
    },
  };
  return api;
}

// Kinds the page knows: where they are served (list path, per namespace or not).
export const KINDS = {
  nodes: { group: "", version: "v1", resource: "nodes", kind: "Node", namespaced: false },
  pods: { group: "", version: "v1", resource: "pods", kind: "Pod", namespaced: true },
  events: { group: "", version: "v1", resource: "events", kind: "Event", namespaced: true },
  slices: { group: "resource.k8s.io", version: "v1", resource: "resourceslices", kind: "ResourceSlice", namespaced: false },
  claims: { group: "resource.k8s.io", version: "v1", resource: "resourceclaims", kind: "ResourceClaim", namespaced: true },
  classes: { group: "resource.k8s.io", version: "v1", resource: "deviceclasses", kind: "DeviceClass", namespaced: false },
  taintRules: { group: "resource.k8s.io", version: "v1", resource: "devicetaintrules", kind: "DeviceTaintRule", namespaced: false },
  health: { group: "sim.cplane.dev", version: "v1alpha1", resource: "devicehealths", kind: "DeviceHealth", namespaced: false },
};

const VERSIONS = { "": "v1", apps: "v1", batch: "v1", "resource.k8s.io": "v1", "sim.cplane.dev": "v1alpha1",
  "rbac.authorization.k8s.io": "v1", "events.k8s.io": "v1", "autoscaling": "v2", "policy": "v1",
  "scheduling.k8s.io": "v1", "storage.k8s.io": "v1", "coordination.k8s.io": "v1" };

// The collection path of a resource, in one namespace or all.
export function collectionPath({ group, resource, namespace = "" }) {
  const version = VERSIONS[group] || "v1";
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource}` : `${base}/${resource}`;
}

export function objectPath(ref) {
  return `${collectionPath(ref)}/${encodeURIComponent(ref.name)}`;
}

// An object reference in the URL (`object=`): RESOURCE[.GROUP]/[NAMESPACE/]NAME.
export function formatRef({ group = "", resource, namespace = "", name }) {
  const kind = group ? `${resource}.${group}` : resource;
  return namespace ? `${kind}/${namespace}/${name}` : `${kind}/${name}`;
}

// The object the URL's `object` and `device` parameters open (null: none).
export function currentRef(params) {
  const ref = parseRef(params.object);
  if (params.device) return { ...(ref || { group: "resource.k8s.io", resource: "resourceslices", name: "" }), device: params.device };
  return ref;
}

export function parseRef(text) {
  if (!text) return null;
  const parts = text.split("/");
  if (parts.length < 2 || parts.length > 3) return null;
  const dot = parts[0].indexOf(".");
  const resource = dot < 0 ? parts[0] : parts[0].slice(0, dot);
  const group = dot < 0 ? "" : parts[0].slice(dot + 1);
  if (parts.length === 3) return { group, resource, namespace: parts[1], name: parts[2] };
  return { group, resource, namespace: "", name: parts[1] };
}
