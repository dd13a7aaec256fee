/**
 * A parsed TOML document seen by the dotted keys a config error names (`agents[0].webhook.url`,
 * `dns.servers[2]`), for the probe that finds the unknown keys of a table whose reading a bad value
 * ended (src/config/fields.ts, `Fields.probeUnknown`).
 */
import type { Table } from './fields.js';

/** One step of a key path: a key of a table, or an index into an array. */
export type PathStep = string | number;

/**
 * The steps of `key` below the table at `prefix` ('' for the top level): `agents[0].webhook.url`
 * below `agents[0]` is `['webhook', 'url']`, `dns.servers[2]` below `dns` is `['servers', 2]`.
 * @returns undefined when `key` is not below `prefix` (the table itself, or another table)
 */
export function pathBelow(prefix: string, key: string): PathStep[] | undefined {
  let rest: string;
  if (prefix === '') rest = key;
  else if (key.startsWith(`${prefix}.`)) rest = key.slice(prefix.length + 1);
  else return undefined;
  const steps = [...rest.matchAll(/\[(\d+)\]|([^.[\]]+)/g)].map((m): PathStep => (m[1] !== undefined ? Number(m[1]) : m[2]!));
  return steps.length === 0 ? undefined : steps;
}

/**
 * A copy of `value` without what `path` names (a key of a table, or an element of an array),
 * sharing every part the path does not go through; `value` itself is never changed.
 * @returns undefined when `path` names nothing in `value`
 */
export function without(value: unknown, path: readonly PathStep[]): unknown {
  const [step, ...rest] = path;
  if (step === undefined) return undefined;
  if (typeof step === 'number') {
    if (!Array.isArray(value) || step >= value.length) return undefined;
    if (rest.length === 0) return value.filter((_, i) => i !== step);
    const inner = without(value[step], rest);
    return inner === undefined ? undefined : value.map((x: unknown, i) => (i === step ? inner : x));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, step)) return undefined;
  const table = value as Table;
  if (rest.length === 0) return Object.fromEntries(Object.entries(table).filter(([k]) => k !== step));
  const inner = without(table[step], rest);
  return inner === undefined ? undefined : { ...table, [step]: inner };
}
