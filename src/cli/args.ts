/**
 * Parsers for the CLI's option values. Each throws a {@link UsageError} naming the option and a
 * valid example, so a typo never turns into a silent default.
 */
import { TASK_STATES, TERMINAL_STATES, type TaskState } from '../store/task-state.js';
import { VERDICTS } from '../uplink/verdicts.js';
import { nearestKey } from '../config/fields.js';
import { UsageError } from './errors.js';

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * A point in time: an ISO-8601 date or date-time (`2026-05-01`, `2026-05-01T10:00:00Z`; a
 * date-time without zone is read as UTC), or an age before `now` (`90s`, `30m`, `2h`, `7d`, `2w`).
 * @returns ms since the epoch
 * @throws UsageError for anything else
 */
export function parseTime(text: string, now: number, option: string): number {
  const t = text.trim();
  const age = /^(\d+(?:\.\d+)?)\s*([smhdw])$/i.exec(t);
  if (age) return now - Math.round(Number(age[1]) * UNIT_MS[age[2]!.toLowerCase()]!);
  if (/^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i.test(t)) {
    const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(t) || t.length === 10 ? t : `${t}Z`;
    const ms = Date.parse(zoned.replace(' ', 'T'));
    if (!Number.isNaN(ms)) return ms;
  }
  throw new UsageError(`${option} ${JSON.stringify(text)}: give an ISO date or time (2026-05-01, 2026-05-01T10:00:00Z) or an age (30m, 2h, 7d)`);
}

/**
 * A whole number from `min` to `max`, digits only (no unit is read: `5s` is refused, not 5).
 * @param unit what the number counts, plural (`milliseconds`, `tasks`), named by the error so a
 *   value typed with another unit is told which one the option takes; none for an id
 * @throws UsageError `--reply-delay takes a whole number of milliseconds, 0 to 600000; got "5s"`
 */
export function parseCount(text: string, option: string, min = 1, max = 1_000_000, unit?: string): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${option} takes a whole number${unit === undefined ? '' : ` of ${unit}`}, ${min} to ${max}; got ${JSON.stringify(text)}`);
  }
  return n;
}

/**
 * An age, ≥ 0, fractions allowed: a bare number of days (`30`, `0.5`), or a number with a unit as
 * `--since` takes one ({@link parseTime}: `90s`, `30m`, `12h`, `7d`, `2w`); at most 100,000 days.
 * @returns ms @throws UsageError
 */
export function parseDays(text: string, option: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([smhdw]?)$/i.exec(text.trim());
  const ms = m ? Number(m[1]) * UNIT_MS[(m[2] || 'd').toLowerCase()]! : Number.NaN;
  if (!Number.isFinite(ms) || ms > 100_000 * UNIT_MS.d!) throw new UsageError(`${option} ${JSON.stringify(text)}: give a number of days (30, 0.5) or an age (12h, 7d, 2w)`);
  return Math.round(ms);
}

/**
 * Words a person types for a task state that are not its name (nor within a typo of it, which
 * nearestKey finds): the state to suggest.
 */
const STATE_WORDS = new Map<string, string>([
  ['done', 'completed'],
  ['complete', 'completed'],
  ['success', 'completed'],
  ['succeeded', 'completed'],
  ['error', 'failed'],
  ['errored', 'failed'],
  ['pending', 'submitted'],
  ['queued', 'submitted'],
  ['running', 'working'],
  ['waiting', 'input-required'],
]);

/**
 * Task states, comma-separated, in any spelling callers see (`working`, `WORKING`,
 * `input-required`, `TASK_STATE_INPUT_REQUIRED`), or the groups `open` and `finished`.
 * @throws UsageError naming the valid values
 */
export function parseStates(text: string, option: string): TaskState[] {
  const out = new Set<TaskState>();
  for (const raw of text.split(',')) {
    const word = raw.trim().toUpperCase().replace(/^TASK_STATE_/, '').replaceAll('-', '_');
    if (word === 'OPEN') {
      for (const s of TASK_STATES) if (!TERMINAL_STATES.has(s)) out.add(s);
    } else if (word === 'FINISHED' || word === 'TERMINAL') {
      for (const s of TERMINAL_STATES) out.add(s);
    } else if ((TASK_STATES as readonly string[]).includes(word)) {
      out.add(word as TaskState);
    } else {
      const valid = [...TASK_STATES.map((s) => s.toLowerCase().replaceAll('_', '-')), 'open', 'finished'];
      // The nearest valid word, as a config error suggests one (config/fields.ts nearestKey), or the state a common word means.
      const typed = raw.trim().toLowerCase();
      const near = STATE_WORDS.get(typed) ?? nearestKey(typed, valid);
      throw new UsageError(`${option} ${JSON.stringify(raw.trim())} is not a task state; use one of ${valid.join(', ')} (comma-separated for several)${near === undefined ? '' : `; did you mean "${near}"?`}`);
    }
  }
  return [...out];
}

/**
 * A ledger verdict filter: an exact verdict (`bad-token`), or a prefix ending in `:` or `*`
 * (`auth:`, `applied*`) that at least one verdict starts with.
 * @returns the filter in the form `queryLedger` takes
 * @throws UsageError naming the known verdicts
 */
export function parseVerdict(text: string, option: string): string {
  const v = text.trim();
  const known = Object.keys(VERDICTS);
  const prefix = /[:*]$/.test(v) ? v.replace(/\*$/, '') : null;
  const ok = prefix !== null ? prefix.length > 0 && known.some((k) => k.startsWith(prefix)) : known.includes(v);
  if (!ok) throw new UsageError(`${option} ${JSON.stringify(text)} matches no verdict; use one of ${known.join(', ')}, or a prefix such as auth: or applied:`);
  return v;
}
