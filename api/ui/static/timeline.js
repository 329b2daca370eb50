// The timeline (lanes per kind, density, scrubber, step and play, diff, replay controls): ui-time's.
// This stub only lets the shell load until it lands.
export function mount(ctx) {}
