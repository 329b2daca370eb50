// Under `cplane replay`: the replay's status and its controls (step, until, play/pause, fork) as
// buttons posting to the control endpoints (api/replay.py, docs/replay.md). They are write controls
// (`data-write`): shown only to a user whom RBAC lets `create` the `replay` resource of
// sim.cplane.dev (what a POST to `.../replay/step` is authorized as), asked with a
// SelfSubjectAccessReview (a server without authentication allows everything, and says so). After each
// move the page follows the cursor (`onMove`).

import { el } from "./dom.js";

export const CONTROL = "/apis/sim.cplane.dev/v1alpha1/replay";
const POLL_MS = 1000; // status refresh while the replay plays
const SPEEDS = ["1", "2", "10", "100", "max"]; // the recorded pace times this

function describe(s) {
  const where = s.mode === "forked" ? `forked at revision ${s.forkedAt}` : `${s.mode} at revision ${s.revision}`;
  const range = s.until !== null && s.until !== undefined ? ` (replays to ${s.until}; ${s.remaining} events left)` : "";
  const next = s.next ? `; next: ${s.next.revision} ${s.next.type} ${s.next.object}` : "";
  return `replay of ${s.source}: ${where}${range}${next}`;
}

// May the user move the replay? (create the `replay` resource of sim.cplane.dev)
function mayMove(ctx) {
  return ctx.api.can("create", "sim.cplane.dev", "replay");
}

// Show the controls in `box` if the server replays (GET CONTROL answers 200); else leave it hidden.
export async function mount(ctx, box, { onMove = () => {} } = {}) {
  let status;
  try {
    status = await ctx.api.get(CONTROL);
  } catch (error) {
    box.hidden = true;
    return;
  }
  const line = el("span", { class: "rp-status", role: "status" });
  const note = el("span", { class: "tl-note", role: "alert" });
  box.replaceChildren(el("strong", { text: "replay " }), line);
  box.hidden = false;
  box.dataset.mode = status.mode;
  let timer = 0;

  function render(s) {
    status = s;
    box.dataset.mode = s.mode;
    box.dataset.revision = String(s.revision);
    line.textContent = describe(s);
    for (const b of box.querySelectorAll("[data-replay-action]")) {
      const action = b.dataset.replayAction;
      const forked = s.mode === "forked";
      b.disabled = forked || (action === "play" && s.mode === "playing") || (action === "pause" && s.mode !== "playing")
        || (action === "fork" && !s.forkOnWrite && (s.forkAt === null || s.forkAt === undefined));
    }
    if (s.mode === "playing") {
      if (!timer) timer = setTimeout(poll, POLL_MS);
    }
  }

  async function poll() {
    timer = 0;
    try {
      const before = status.revision;
      const s = await ctx.api.get(CONTROL);
      render(s);
      if (s.revision !== before) onMove(s);
    } catch (error) {
      note.textContent = error.message;
    }
  }

  async function move(action, query = {}) {
    note.textContent = "";
    const params = new URLSearchParams(query);
    const path = `${CONTROL}/${action}${params.toString() ? `?${params}` : ""}`;
    try {
      const s = await ctx.api.post(path, {});
      render(s);
      onMove(s);
    } catch (error) {
      note.textContent = `${action}: ${error.message}`;
    }
  }

  render(status);
  if (!(await mayMove(ctx))) {
    box.dataset.ready = "read-only"; // the status only: RBAC lets this user move nothing
    return;
  }

  const count = el("input", { type: "number", min: 1, value: 1, size: 5, "aria-label": "events per step" });
  const until = el("input", { type: "number", min: 0, size: 8, placeholder: "revision", "aria-label": "until revision" });
  const speed = el("select", { "aria-label": "replay speed" }, ...SPEEDS.map((s) => el("option", { value: s, text: `×${s}` })));
  const button = (action, text, handler, title) =>
    el("button", { type: "button", "data-write": true, "data-replay-action": action, text, title, onclick: handler });
  box.append(
    button("step", "step", () => move("step", { count: String(Math.max(1, Number(count.value) || 1)) }), "apply the next events"),
    count,
    button("until", "until", () => until.value && move("until", { revision: until.value }), "apply events up to a revision"),
    until,
    button("play", "play", () => move("play", { speed: speed.value }), "play at the recorded pace times the speed"),
    speed,
    button("pause", "pause", () => move("pause")),
    button("fork", "fork", () => move("fork"), "become a live, writable cluster at the cursor (needs --fork or --fork-at)"),
    note);
  render(status);
  box.dataset.ready = "controls";
}
