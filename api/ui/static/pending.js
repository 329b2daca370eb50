// Pending pods (`#pending`): every Pending pod without a node, with the scheduler's own message at
// once and `cplane why`'s explanation (the `pods/why` subresource, at the revision shown) when it
// arrives — its summary, and the smallest change that would make the pod fit (its suggestions).

import { esc } from "./map.js";

const ASKING_MAX = 4; // explanations asked at once (the browser has few connections to the server)
const MARGIN = "200px"; // a pod this close to the screen counts as on it
const REFRESH_MS = 2000; // a live explanation is asked again at most this often while the cluster changes

function isPending(pod) {
  const meta = pod.metadata || {};
  return (pod.status || {}).phase === "Pending" && !(pod.spec || {}).nodeName && !meta.deletionTimestamp;
}

function scheduled(pod) {
  return ((pod.status || {}).conditions || []).find((c) => c.type === "PodScheduled") || null;
}

function whyHtml(entry, asked) {
  if (!entry) return asked ? '<p class="why loading">asking why…</p>' : '<p class="why waiting">why: asked when shown</p>';
  if (entry.error) return `<p class="why error">why: ${esc(entry.error)}</p>`;
  const why = entry.result || {};
  const out = [`<div class="why"><p class="why-summary"><strong class="verdict">${esc(why.verdict)}</strong>: ${esc(why.summary)}</p>`];
  const suggestions = why.suggestions || [];
  if (suggestions.length) {
    out.push('<p class="why-change">smallest change:</p><ul class="suggestions">');
    for (const s of suggestions) out.push(`<li class="suggestion">${esc(s.message || s.change)}</li>`);
    out.push("</ul>");
  } else if (why.verdict === "Unschedulable") {
    out.push('<p class="why-change">no single change found that would make it fit</p>');
  }
  out.push("</div>");
  return out.join("");
}

// The pending list of a snapshot as HTML (pure: the explanations, and the pods being asked, are given).
export function renderPending(snapshot, params, explanations, asking = new Map()) {
  const namespace = params.namespace || "";
  const pods = snapshot.pods.filter((p) => isPending(p) && (!namespace || p.metadata.namespace === namespace))
    .sort((a, b) => (a.metadata.creationTimestamp || "").localeCompare(b.metadata.creationTimestamp || "") ||
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
  const out = [`<h2>Pending pods <span class="count">${pods.length}</span></h2>`];
  if ((snapshot.denied || {}).pods && !snapshot.denied.pods.partial) out.push('<p class="note" data-note="">You may not list pods: none shown.</p>');
  if (!pods.length) out.push('<p class="empty">none</p>');
  out.push('<ul class="pending-pods">');
  pods.forEach((pod) => {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const cond = scheduled(pod);
    out.push(`<li data-pending-pod="${esc(key)}"><button type="button" class="pod" data-open-pod="${esc(key)}">${esc(key)}</button>`);
    if (cond && cond.message) out.push(` <span class="sched-reason">${esc(cond.reason || "")}</span> <p class="sched-message">${esc(cond.message)}</p>`);
    else out.push(' <span class="sched-reason">not yet tried by the scheduler</span>');
    out.push(whyHtml(explanations.get(key), asking.has(key)));
    out.push("</li>");
  });
  out.push("</ul>");
  return { html: out.join(""), pods };
}

export function mount(ctx) {
  const section = document.getElementById("pending");
  const explanations = new Map(); // "ns/name" -> {revision, uid, result | error}
  const asking = new Map(); // "ns/name" -> revision asked
  const visible = new Set(); // "ns/name" of the pods on screen (or nearly)
  let shown = new Map(); // "ns/name" -> pod: the pods listed
  let timer = 0;
  let frame = 0;
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const key = entry.target.dataset.pendingPod;
      if (entry.isIntersecting) visible.add(key);
      else visible.delete(key);
    }
    explain();
  }, { rootMargin: MARGIN });

  function render() {
    frame = 0;
    const { html, pods } = renderPending(ctx.state.snapshot, ctx.params, explanations, asking);
    shown = new Map(pods.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]));
    for (const key of explanations.keys()) if (!shown.has(key)) explanations.delete(key);
    for (const key of visible) if (!shown.has(key)) visible.delete(key);
    if (section.__html !== html) {
      section.innerHTML = html;
      section.__html = html;
      observer.disconnect(); // the new items, observed again (their keys stay visible until told otherwise)
      for (const li of section.querySelectorAll("li[data-pending-pod]")) observer.observe(li);
    }
    explain();
  }

  function renderSoon() {
    if (!frame) frame = requestAnimationFrame(render);
  }

  // Ask `why` for the visible pods whose explanation is missing or of another revision, at most
  // ASKING_MAX at a time (each answer renders, which asks the next).
  function explain() {
    const revision = ctx.state.revision;
    const rv = ctx.state.rv;
    let later = false;
    let started = false;
    // the pods without an explanation first, then the explanations of an older revision (live)
    const unexplained = (key) => {
      const have = explanations.get(key);
      return !have || have.uid !== (shown.get(key) || { metadata: {} }).metadata.uid || have.rv !== rv;
    };
    const keys = [...visible];
    for (const key of [...keys.filter(unexplained), ...keys.filter((k) => !unexplained(k))]) {
      if (asking.size >= ASKING_MAX) break;
      const pod = shown.get(key);
      if (!pod) continue;
      const have = explanations.get(key);
      if (have && have.uid === pod.metadata.uid && have.revision === revision && have.rv === rv) continue;
      if (asking.has(key)) continue;
      if (have && have.uid === pod.metadata.uid && rv === null && have.rv === null && Date.now() - have.at < REFRESH_MS) {
        later = true;
        continue;
      }
      asking.set(key, revision);
      started = true;
      const at = rv === null ? "" : `?at=${rv}`;
      const path = `/apis/sim.cplane.dev/v1alpha1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods/${encodeURIComponent(pod.metadata.name)}/why${at}`;
      ctx.api.get(path)
        .then((result) => ({ result }), (error) => ({ error: error.status === 403 ? `you may not ask (${error.message})` : error.message }))
        .then((outcome) => {
          asking.delete(key);
          if (ctx.state.rv === rv) explanations.set(key, { ...outcome, uid: pod.metadata.uid, revision, rv, at: Date.now() });
          renderSoon();
        });
    }
    if (started) renderSoon(); // "asking why…"
    if (later && !timer) {
      timer = setTimeout(() => {
        timer = 0;
        render();
      }, REFRESH_MS);
    }
  }

  section.addEventListener("click", (event) => {
    const target = event.target.closest("button[data-open-pod]");
    if (!target) return;
    const [namespace, name] = target.dataset.openPod.split("/");
    ctx.openObject({ group: "", resource: "pods", namespace, name });
  });
  ctx.on("snapshot", render);
  ctx.on("params", render);
}
