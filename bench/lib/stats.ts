/** Small statistics and formatting helpers for the benchmark tables. */

/** The q-quantile (0..1) of `values` by nearest rank on a sorted copy; NaN for no values. */
export function quantile(values: ArrayLike<number>, q: number): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
  return sorted[rank]!;
}

export function median(values: ArrayLike<number>): number {
  return quantile(values, 0.5);
}

/** `1234.5` → `1,235`; small values keep `digits` decimals. */
export function num(v: number, digits = 0): string {
  if (!Number.isFinite(v)) return 'n/a';
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Milliseconds with a precision that suits the size. */
export function ms(v: number): string {
  if (!Number.isFinite(v)) return 'n/a';
  if (v < 10) return `${v.toFixed(2)} ms`;
  if (v < 100) return `${v.toFixed(1)} ms`;
  return `${num(v)} ms`;
}

export function bytes(v: number): string {
  if (!Number.isFinite(v)) return 'n/a';
  if (v < 1024) return `${v} B`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)} KiB`;
  return `${(v / 1024 / 1024).toFixed(1)} MiB`;
}

export function ratio(a: number, b: number): string {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${(a / b).toFixed(2)}×` : 'n/a';
}

/** A markdown table. */
export function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** `met` / `MISSED` for a goal line (reported, never asserted). */
export function verdict(ok: boolean): string {
  return ok ? 'met' : '**missed**';
}
