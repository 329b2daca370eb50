// A small YAML emitter for the details panel: block mappings and sequences, plain scalars where
// YAML reads them back as the same string, double-quoted (JSON-escaped) ones otherwise.

const RESERVED = /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|\.nan|\.NaN|\.NAN|[-+]?\.(?:inf|Inf|INF))$/;
const NUMBERLIKE = /^[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^0[xob][0-9a-fA-F_]+$|^\d+(?::[0-5]?\d)+(?:\.\d*)?$/;
const INDICATOR = /^[-?:,[\]{}#&*!|>'"%@`\s]/;
const TIMESTAMP = /^\d{4}-\d\d?-\d\d?(?:$|[Tt ])/; // YAML 1.1 readers make these dates
const SPECIAL = /^(?:=|<<)$/; // YAML 1.1's value and merge keys

function needsQuotes(s) {
  return s === "" || RESERVED.test(s) || NUMBERLIKE.test(s) || INDICATOR.test(s) || /\s$/.test(s) ||
    TIMESTAMP.test(s) || SPECIAL.test(s) ||
    s.includes(": ") || s.includes(" #") || s.endsWith(":") || /[\x00-\x1f\x7f\u2028\u2029]/.test(s);
}

export function scalar(value) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return value > 0 ? ".inf" : value < 0 ? "-.inf" : ".nan";
    const text = String(value);
    return /e/.test(text) && !text.includes(".") ? text.replace("e", ".0e") : text; // 1e+21 → 1.0e+21
  }
  const s = String(value);
  return needsQuotes(s) ? JSON.stringify(s) : s;
}

function isCollection(v) {
  return v !== null && typeof v === "object" && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0);
}

function emptyCollection(v) {
  return Array.isArray(v) ? "[]" : "{}";
}

function emit(value, indent, out) {
  const pad = " ".repeat(indent);
  if (Array.isArray(value)) {
    for (const item of value) {
      if (isCollection(item) && !Array.isArray(item)) {
        // "- key: v" then the rest of the mapping indented under the first key
        const lines = [];
        emit(item, indent + 2, lines);
        lines[0] = `${pad}- ${lines[0].slice(indent + 2)}`;
        out.push(...lines);
      } else if (isCollection(item)) {
        out.push(`${pad}-`);
        emit(item, indent + 2, out);
      } else {
        out.push(`${pad}- ${item !== null && typeof item === "object" ? emptyCollection(item) : scalar(item)}`);
      }
    }
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const key = scalar(k);
    if (isCollection(v)) {
      out.push(`${pad}${key}:`);
      emit(v, Array.isArray(v) ? indent : indent + 2, out);
    } else {
      out.push(`${pad}${key}: ${v !== null && typeof v === "object" ? emptyCollection(v) : scalar(v)}`);
    }
  }
}

// The YAML text of a JSON value (what `kubectl get -o yaml` shows, key order kept).
export function toYaml(value) {
  if (!isCollection(value)) {
    return `${value !== null && typeof value === "object" ? emptyCollection(value) : scalar(value)}\n`;
  }
  const out = [];
  emit(value, 0, out);
  return `${out.join("\n")}\n`;
}
