// Kubernetes quantities ("80Gi", "10G", "500m", "7") as numbers, and back to text in the unit of a
// reference quantity: enough for the map's used/total of counters and consumable capacity.

const BINARY = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const PATTERN = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

// The value of a quantity (a string, or a number), NaN when it is not one.
export function parseQuantity(text) {
  if (typeof text === "number") return text;
  const m = PATTERN.exec(String(text ?? "").trim());
  if (!m) return NaN;
  const number = Number(m[1] + (m[2] || ""));
  const suffix = m[3] || "";
  return number * (BINARY[suffix] || DECIMAL[suffix]);
}

function suffixOf(text) {
  const m = PATTERN.exec(String(text ?? "").trim());
  return m && !m[2] ? m[3] || "" : "";
}

function trim(n) {
  const rounded = Math.round(n * 100) / 100;
  return String(rounded);
}

// `value` written in the unit of `like` (e.g. 32212254720 like "80Gi" → "30Gi").
export function formatQuantity(value, like) {
  if (!Number.isFinite(value)) return "?";
  const suffix = suffixOf(like);
  const unit = BINARY[suffix] || DECIMAL[suffix] || 1;
  return `${trim(value / unit)}${suffix}`;
}
