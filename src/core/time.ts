/**
 * An A2A ProtoJSON timestamp: ISO-8601 UTC with a `Z`, to the millisecond, so a timestamp a
 * caller reads and sends back (ListTasks `statusTimestampAfter`) compares exactly with the
 * stored one (DM-SERIAL-003).
 */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString();
}

/** ISO-8601 UTC with a `Z`, to the second: for text people read. */
export function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A short human duration: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}
