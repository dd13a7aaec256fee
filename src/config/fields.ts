/**
 * Typed readers for one TOML table. Every failure throws a {@link ConfigError} that names the
 * dotted key and says what a valid value looks like, so a person can fix the file without
 * reading code. Each reader also records the value in effect — the file's, or the default — so
 * `a2a-mailbridge config` prints every key a config has, defaults filled in, from the same code
 * that validates it.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { distance } from 'fastest-levenshtein';
import { ConfigError, ConfigErrors, MAX_LISTED_KEY_ERRORS, UnknownKeyError } from './config-error.js';
import { pathBelow, without } from './table-paths.js';

export { ConfigError, ConfigErrors, FILE_KEY, MAX_LISTED_KEY_ERRORS, oneError, UnknownKeyError } from './config-error.js';

/**
 * How many times {@link Fields.probeUnknown} reads a table again at most: the first reading finds
 * the bad values, each next one takes out those found; a table with more bad values names its
 * unknown keys once they are fixed. Each reading reads the whole table (every row of a table array).
 */
const MAX_PROBES = 8;

export type Table = Record<string, unknown>;

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return 'an array';
  if (v === null || v === undefined) return 'nothing';
  if (typeof v === 'object') return 'a table';
  return typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' ? String(v) : typeof v;
}

/**
 * The known key closest to an unknown one: within an edit distance of a third of its length (at
 * least 2), or one that starts with the other (`bearer` → `bearer_file`); undefined when none is.
 */
export function nearestKey(unknown: string, known: Iterable<string>): string | undefined {
  let best: { key: string; d: number } | undefined;
  const u = unknown.toLowerCase();
  for (const k of known) {
    const d = distance(u, k.toLowerCase());
    const prefix = Math.min(u.length, k.length) >= 3 && (k.startsWith(u) || u.startsWith(k));
    if ((d <= Math.max(2, Math.floor(u.length / 3)) || prefix) && (!best || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}

/** A view of one table that remembers its dotted prefix, which keys were read, and the value in effect of each. */
export class Fields {
  private readonly seen = new Set<string>();
  /** Every key a reader asked about, present or not: the candidates for a typo's suggestion. */
  private readonly known = new Set<string>();
  /** The value in effect of each key read, as TOML would write it (seconds, not ms; absolute paths). */
  readonly effective: Table = {};

  /**
   * @param skipSecrets read no secret file (the `*_file` readers of values.ts record the path and
   *   give ''): for commands that need the config's paths and addresses, never its secrets
   * @param absentAs for a table absent from the file: the key of its parent's table that is close
   *   to its name (a likely misspelling of it), named by the errors of its required keys
   * @param configFile the config file the table is read from ('' when none), for the commands its
   *   errors name (src/config/config-path.ts); inherited by the tables within
   * @param probing a copy read by {@link probeUnknown} only, which probes no further; inherited
   */
  constructor(
    readonly prefix: string,
    private readonly table: Table,
    readonly skipSecrets = false,
    private readonly absentAs?: string,
    readonly configFile = '',
    readonly problems: ConfigError[] = [],
    private readonly probing = false,
  ) {}

  /**
   * Records that key `name`, present in the table, does not apply (`message` says why and the
   * fix), to be reported with the file's other key problems; it is not also called unknown.
   */
  refuse(name: string, message: string): void {
    this.seen.add(name);
    this.problems.push(new ConfigError(this.key(name), message));
  }

  /**
   * Runs `read`: the readers of one table, or of a part of one that what follows does not depend
   * on. A ConfigError it throws (a bad value, or a required key missing: the readers after it may
   * depend on it, so that reading ends there) is recorded with the file's other problems
   * ({@link problems}) instead of ending the file's reading, so the later tables' unknown keys and
   * bad values are reported in the same run. Any other error is thrown as is.
   * @returns what `read` returns, or undefined when it threw a ConfigError (then `problems` is not empty)
   */
  collect<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      this.problems.push(...(err instanceof ConfigErrors ? err.errors : [err]));
      return undefined;
    }
  }

  /**
   * Reads the table `name` with `read` and then records its unknown keys ({@link rejectUnknown}),
   * within {@link collect}: a bad value ends this table only, and its unknown keys are found by
   * reading it again ({@link readWhole}).
   * @returns what `read` returns, or undefined when a ConfigError was recorded
   */
  section<T>(name: string, read: (t: Fields) => T, required = false): T | undefined {
    return this.collect(() =>
      this.table_(name, required).readWhole((t) => {
        const v = read(t);
        t.rejectUnknown();
        return v;
      }),
    );
  }

  /**
   * Runs `read`: every reader of this table, ending with {@link rejectUnknown}. A ConfigError it
   * throws (a bad value) ends the reading before the later keys were asked for, so the table's
   * unknown keys could not be told, and a misspelled key after a bad value was named only once the
   * value was fixed (two runs, fresh-user trial): they are found by {@link probeUnknown} and thrown
   * with the error, after it.
   * @throws ConfigError what `read` threw, as {@link ConfigErrors} with the unknown keys found
   */
  readWhole<T>(read: (t: Fields) => T): T {
    try {
      return read(this);
    } catch (err) {
      if (!(err instanceof ConfigError) || this.probing) throw err;
      const stop = err instanceof ConfigErrors ? err.errors : [err];
      const unknown = this.probeUnknown(read, stop);
      if (unknown.length === 0) throw err;
      throw new ConfigErrors([...stop, ...unknown]);
    }
  }

  /**
   * The unknown keys of this table, and of the tables within it, that a reading stopped by a bad
   * value did not get to. `read` (the readers of the whole table, ending with {@link rejectUnknown})
   * runs again on a copy of the table, its secret files not read and its problems its own, first as
   * it is, then each time without the keys its bad values were found at, until it is read whole;
   * every key a copy's {@link rejectUnknown} found is unknown (it runs once a table was read whole,
   * and a key taken out is never called unknown). It stops early at a bad choice
   * ({@link ConfigError.choice}), at a required key missing (nothing to take out), and after
   * {@link MAX_PROBES} readings: the tables then read whole give their unknown keys, the others none.
   * None is made once the file has {@link MAX_LISTED_KEY_ERRORS} problems: what it found would
   * only be counted (a 1 MB config of 4,000 agents, each with a bad value and an unknown key, was
   * read in 0.7 s instead of 0.12 s when every agent was probed).
   * @param reported errors recorded already: their keys are not reported again
   * @returns the unknown keys' errors (none while probing: a copy is not probed again)
   */
  probeUnknown(read: (t: Fields) => unknown, reported: readonly ConfigError[] = []): ConfigError[] {
    if (this.probing || this.problems.length + reported.length >= MAX_LISTED_KEY_ERRORS) return [];
    const known = new Set([...this.problems, ...reported].map((e) => e.key));
    const found = new Map<string, ConfigError>();
    let table = this.table;
    for (let round = 0; round < MAX_PROBES; round++) {
      const copy = new Fields(this.prefix, table, true, undefined, this.configFile, [], true);
      const bad: ConfigError[] = [];
      try {
        read(copy);
      } catch (err) {
        if (!(err instanceof ConfigError)) break;
        bad.push(...(err instanceof ConfigErrors ? err.errors : [err]));
      }
      for (const p of copy.problems) {
        if (!(p instanceof UnknownKeyError)) bad.push(p);
        else if (!known.has(p.key) && !found.has(p.key)) found.set(p.key, p);
      }
      if (bad.length === 0 || bad.some((e) => e.choice)) break;
      let next: Table = table;
      for (const e of bad) {
        const path = pathBelow(this.prefix, e.key);
        const smaller = path === undefined ? undefined : without(next, path);
        if (smaller !== undefined) next = smaller as Table;
      }
      if (next === table) break;
      table = next;
    }
    return [...found.values()];
  }

  key(name: string): string {
    return this.prefix ? `${this.prefix}.${name}` : name;
  }

  has(name: string): boolean {
    this.known.add(name);
    return this.table[name] !== undefined;
  }

  /** Whether a key no longer read is present (to refuse it by name); never offered as a typo's suggestion. */
  hasRetired(name: string): boolean {
    return this.table[name] !== undefined;
  }

  private raw(name: string): unknown {
    this.seen.add(name);
    this.known.add(name);
    return this.table[name];
  }

  /**
   * The error for a required key that is absent. A key of this table no reader has asked for yet
   * and close to `name` ({@link nearestKey}) is named as the likely misspelling: `[sever]` would
   * otherwise read as "server.bearer_file is required", and the typo check runs only after.
   */
  private required(name: string, what: string): ConfigError {
    const near = this.nearUnread(name);
    const hint =
      near !== undefined
        ? `; ${this.key(near)} is in the file: a misspelling of ${this.key(name)}?`
        : this.absentAs !== undefined
          ? `; the file has no [${this.prefix}] but has [${this.absentAs}]: a misspelling of it?`
          : '';
    return new ConfigError(this.key(name), `is required (${what})${hint}`);
  }

  /** The key of this table close to `name` that no reader has asked for yet. */
  private nearUnread(name: string): string | undefined {
    return nearestKey(name, Object.keys(this.table).filter((k) => !this.known.has(k)));
  }

  /** Records `value` as the value in effect of `name` (a reader's result, or a normalised form of it). */
  setEffective<T>(name: string, value: T): T {
    this.effective[name] = value;
    return value;
  }

  string(name: string, fallback?: string): string {
    const v = this.raw(name);
    if (v === undefined) {
      if (fallback !== undefined) return this.setEffective(name, fallback);
      throw this.required(name, 'a string');
    }
    if (typeof v !== 'string') throw new ConfigError(this.key(name), `must be a string, got ${describe(v)}`);
    return this.setEffective(name, v);
  }

  /**
   * A file or folder path, resolved against `baseDir` (the config file's folder); recorded absolute.
   * A path that starts with `~` is refused (ConfigError naming the key and the absolute path to
   * write): no shell expands it here, so `~/Mail` would name a folder called `~` in `baseDir`.
   */
  path(name: string, baseDir: string, fallback?: string): string {
    const v = this.string(name, fallback);
    if (/^~(?:[/\\]|$)/.test(v)) {
      throw new ConfigError(this.key(name), `${describe(v)} starts with "~", which is not expanded (a relative path is taken from the config file's folder); write the full path: ${describe(join(homedir(), v.slice(1)))}`);
    }
    return this.setEffective(name, resolve(baseDir, v));
  }

  /** The value of key `name` when it is a string, without reading it (no default, no error): for checks across tables. */
  peekString(name: string): string | undefined {
    const v = this.table[name];
    return typeof v === 'string' ? v : undefined;
  }

  optionalString(name: string): string | undefined {
    return this.has(name) ? this.string(name) : (this.raw(name), undefined);
  }

  integer(name: string, fallback: number | undefined, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) {
      if (fallback !== undefined) return this.setEffective(name, fallback);
      throw this.required(name, `an integer from ${min} to ${max}`);
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new ConfigError(this.key(name), `must be an integer from ${min} to ${max}, got ${describe(v)}`);
    }
    return this.setEffective(name, v);
  }

  boolean(name: string, fallback: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return this.setEffective(name, fallback);
    if (typeof v !== 'boolean') throw new ConfigError(this.key(name), `must be true or false, got ${describe(v)}`);
    return this.setEffective(name, v);
  }

  oneOf<T extends string>(name: string, choices: readonly T[], fallback?: T): T {
    try {
      const v = this.string(name, fallback);
      if (!(choices as readonly string[]).includes(v)) {
        // A typo's nearest allowed value, as an unknown key gets its nearest known key.
        const near = nearestKey(v, choices);
        throw new ConfigError(this.key(name), `must be one of ${choices.map((c) => `"${c}"`).join(', ')}, got ${describe(v)}${near === undefined ? '' : `; did you mean "${near}"?`}`);
      }
      return v as T;
    } catch (err) {
      if (err instanceof ConfigError) err.choice = true;
      throw err;
    }
  }

  stringArray(name: string, fallback: string[]): string[] {
    const v = this.raw(name);
    if (v === undefined) return this.setEffective(name, fallback);
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new ConfigError(this.key(name), 'must be an array of strings');
    }
    return this.setEffective(name, v as string[]);
  }

  /**
   * A whole-string, case-insensitive regular expression: the source is wrapped as `^(?:…)$`, so
   * an alternation such as `a|b` cannot match a mere prefix or suffix (`endsWith` accepts
   * `evilmessagingengine.com`). Leading `^` and trailing `$` in the source are dropped.
   */
  pattern(name: string, fallback?: string): RegExp {
    const source = this.string(name, fallback).replace(/^\^/, '').replace(/(?<!\\)\$$/, '');
    const anchored = `^(?:${source})$`;
    try {
      return new RegExp(anchored, 'i');
    } catch (err) {
      throw new ConfigError(this.key(name), `is not a valid regular expression: ${(err as Error).message}`, { cause: err });
    }
  }

  table_(name: string, required = false): Fields {
    const v = this.raw(name);
    if (v === undefined) {
      if (required) throw this.required(name, 'a table');
      const near = this.nearUnread(name);
      return this.child(name, new Fields(this.key(name), {}, this.skipSecrets, near === undefined ? undefined : this.key(near), this.configFile, this.problems, this.probing));
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      throw new ConfigError(this.key(name), `must be a table, got ${describe(v)}`);
    }
    return this.child(name, new Fields(this.key(name), v as Table, this.skipSecrets, undefined, this.configFile, this.problems, this.probing));
  }

  tableArray(name: string): Fields[] {
    const v = this.raw(name);
    if (v === undefined) {
      this.setEffective(name, []);
      return [];
    }
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x))) {
      throw new ConfigError(this.key(name), `must be an array of tables ([[${this.key(name)}]])`);
    }
    const tables = (v as Table[]).map((t, i) => new Fields(`${this.key(name)}[${i}]`, t, this.skipSecrets, undefined, this.configFile, this.problems, this.probing));
    this.setEffective(name, tables.map((t) => t.effective));
    return tables;
  }

  private child(name: string, f: Fields): Fields {
    this.setEffective(name, f.effective);
    return f;
  }

  /**
   * Records every key present in the table that no reader asked for (a typo is an error, not a
   * silent default), suggesting the nearest known key; the first of the table also lists the keys
   * known there, the others refer to it (a list per key made 94,000 unknown keys 28 MB of text).
   * Reported with the file's other key problems ({@link problems}: the loader throws them all at once).
   */
  rejectUnknown(): void {
    const where = this.prefix ? `[${this.prefix.replace(/\[\d+\]/g, '')}]` : 'the top level';
    let first: string | undefined;
    for (const k of Object.keys(this.table)) {
      if (this.seen.has(k)) continue;
      const near = nearestKey(k, this.known);
      let message: string;
      if (first === undefined) {
        const list = [...this.known].sort().join(', ');
        message = near !== undefined ? `is not a known key; did you mean ${this.key(near)}? (known in ${where}: ${list})` : `is not a known key; the keys known in ${where} are: ${list}`;
        first = this.key(k);
      } else {
        message = near !== undefined ? `is not a known key; did you mean ${this.key(near)}?` : `is not a known key; the keys known in ${where} are listed with ${first}`;
      }
      this.problems.push(new UnknownKeyError(this.key(k), message));
    }
  }
}
