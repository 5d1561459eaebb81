// table.mjs: statistics and the plain-text table, shared by bench.mjs (this folder) and
// ../compare.mjs (native host vs this reference), so both print numbers the same way.

export const sorted = (xs) => [...xs].sort((a, b) => a - b);

export function median(xs) {
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// Nearest-rank percentile.
export function pct(xs, p) {
  const s = sorted(xs);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export const summary = (xs) => ({ min: Math.min(...xs), median: median(xs), max: Math.max(...xs) });

// Three significant-ish digits: 1234, 56.7, 0.89.
export function fmt(x) {
  if (typeof x !== "number") return x == null ? "—" : String(x);
  if (!Number.isFinite(x)) return String(x);
  return Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2);
}

// Rows of strings -> aligned lines; the first `left` columns are left-aligned, the rest right.
export function formatTable(head, rows, left = 2) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => (i < left ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}
