import type Database from 'better-sqlite3';
import type { Db } from './db.js';

/**
 * Prepared statements, compiled once per connection and SQL text (better-sqlite3 statements are
 * reusable; compiling one costs more than running a simple query). The SQL texts are the
 * constants of the store modules, plus a bounded set of filter combinations, so the cache stays
 * small.
 */
const cache = new WeakMap<Db, Map<string, Database.Statement>>();

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
