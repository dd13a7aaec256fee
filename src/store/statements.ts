import type Database from 'better-sqlite3';
import type { Db } from './db.js';

/**
 * Prepared statements, compiled once per connection and SQL text (better-sqlite3 statements are
 * reusable; compiling one costs more than running a simple query). The SQL texts are the
 * constants of the store modules, plus a bounded set of filter combinations, so the cache stays
 * small.
 */
const cache = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * A WHERE clause built from optional filters: `narrow(clause, name, value)` adds `clause` and the
 * named parameter when `value` is defined. `sql()` is the conditions joined with AND ('' for none).
 */
export function conditions(params: Record<string, unknown>, first: string[] = []) {
  const where = [...first];
  return {
    narrow(clause: string, name: string, value: unknown): void {
      if (value === undefined) return;
      where.push(clause);
      params[name] = value;
    },
    add(clause: string): void {
      where.push(clause);
    },
    sql: (): string => where.join(' AND '),
  };
}

export function stmt(db: Db, sql: string): Database.Statement {
  let byText = cache.get(db);
  if (!byText) {
    byText = new Map();
    cache.set(db, byText);
  }
  let s = byText.get(sql);
  if (!s) {
    s = db.prepare(sql);
    byText.set(sql, s);
  }
  return s;
}
