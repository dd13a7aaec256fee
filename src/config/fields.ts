/**
 * Typed readers for one TOML table. Every failure throws a {@link ConfigError} that names the
 * dotted key and says what a valid value looks like, so a person can fix the file without
 * reading code.
 */

/** Thrown for any invalid configuration. `key` is the dotted TOML key (e.g. `agents[0].webhook.url`). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly key: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`config key ${key}: ${message}`, options);
  }
}

export type Table = Record<string, unknown>;

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return 'an array';
  if (v === null || v === undefined) return 'nothing';
  if (typeof v === 'object') return 'a table';
  return typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' ? String(v) : typeof v;
}

/** A view of one table that remembers its dotted prefix and which keys were read. */
export class Fields {
  private readonly seen = new Set<string>();

  constructor(
    readonly prefix: string,
    private readonly table: Table,
  ) {}

  key(name: string): string {
    return this.prefix ? `${this.prefix}.${name}` : name;
  }

  has(name: string): boolean {
    return this.table[name] !== undefined;
  }

  private raw(name: string): unknown {
    this.seen.add(name);
    return this.table[name];
  }

  string(name: string, fallback?: string): string {
    const v = this.raw(name);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      throw new ConfigError(this.key(name), 'is required (a string)');
    }
    if (typeof v !== 'string') throw new ConfigError(this.key(name), `must be a string, got ${describe(v)}`);
    return v;
  }

  optionalString(name: string): string | undefined {
    return this.has(name) ? this.string(name) : (this.raw(name), undefined);
  }

  integer(name: string, fallback: number | undefined, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      throw new ConfigError(this.key(name), `is required (an integer from ${min} to ${max})`);
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new ConfigError(this.key(name), `must be an integer from ${min} to ${max}, got ${describe(v)}`);
    }
    return v;
  }

  boolean(name: string, fallback: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw new ConfigError(this.key(name), `must be true or false, got ${describe(v)}`);
    return v;
  }

  oneOf<T extends string>(name: string, choices: readonly T[], fallback?: T): T {
    const v = this.string(name, fallback);
    if (!(choices as readonly string[]).includes(v)) {
      throw new ConfigError(this.key(name), `must be one of ${choices.map((c) => `"${c}"`).join(', ')}, got ${describe(v)}`);
    }
    return v as T;
  }

  stringArray(name: string, fallback: string[]): string[] {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new ConfigError(this.key(name), 'must be an array of strings');
    }
    return v as string[];
  }

  /**
   * A whole-string, case-insensitive regular expression: the source is wrapped as `^(?:…)$`, so
   * an alternation such as `a|b` cannot match a mere prefix or suffix (`endsWith` accepts
   * `evilmessagingengine.com`: FACTS.md). Leading `^` and trailing `$` in the source are dropped.
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
      if (required) throw new ConfigError(this.key(name), 'is required (a table)');
      return new Fields(this.key(name), {});
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      throw new ConfigError(this.key(name), `must be a table, got ${describe(v)}`);
    }
    return new Fields(this.key(name), v as Table);
  }

  tableArray(name: string): Fields[] {
    const v = this.raw(name);
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'object' || x === null || Array.isArray(x))) {
      throw new ConfigError(this.key(name), `must be an array of tables ([[${this.key(name)}]])`);
    }
    return (v as Table[]).map((t, i) => new Fields(`${this.key(name)}[${i}]`, t));
  }

  /** Throws for any key present in the table that no reader asked for (a typo is an error, not a silent default). */
  rejectUnknown(): void {
    for (const k of Object.keys(this.table)) {
      if (!this.seen.has(k)) throw new ConfigError(this.key(k), 'is not a known key; check its spelling');
    }
  }
}
