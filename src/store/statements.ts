import type Database from 'better-sqlite3';
import type { Db } from './db.js';

/**
 * Prepared statements, compiled once per connection and SQL text (better-sqlite3 statements are
 * reusable; compiling one costs more than running a simple query). The SQL texts are the
 * constants of the store modules, plus a bounded set of filter combinations, so the cache stays
 * small.
 *
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
    s = db.prepare(stableParams(sql));
    byText.set(sql, s);
  }
  return s;
}

/** A character SQLite reads as part of an identifier or a parameter's name (its tokenizer's IdChar: letters, digits, `_`, `$`, and every non-ASCII character). */
const ID_CHAR = /[\w$\u0080-\uffff]/;

/**
 * `sql` with a unary `+` before each parameter (`?`, `?NNN`, `@name`, `:name`, `$name`) outside
 * string literals, quoted identifiers (`"…"`, `` `…` ``, `[…]`) and comments, so binding it never
 * recompiles the statement (see above). A `$`, `@` or `:` inside a name (`a$b`, `@a$b`) is part of
 * that name, as SQLite's tokenizer reads it (https://sqlite.org/lang_expr.html#varparam). A
 * parameter already written `+?` is left as it is.
 */
export function stableParams(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === '[') {
      // A quoted identifier in brackets (MS Access/SQL Server style, which SQLite accepts), to its `]`.
      const j = sql.indexOf(']', i + 1);
      const end = j === -1 ? sql.length : j + 1;
      out += sql.slice(i, end);
      i = end;
    } else if (c !== '$' && ID_CHAR.test(c)) {
      // An identifier, keyword or number, whole: a `$` inside it does not start a parameter.
      let j = i + 1;
      while (j < sql.length && ID_CHAR.test(sql[j]!)) j++;
      out += sql.slice(i, j);
      i = j;
    } else if (c === "'" || c === '"' || c === '`') {
      // A literal or quoted identifier, to its closing quote (a doubled quote stays inside).
      let j = i + 1;
      for (; j < sql.length; j++) {
        if (sql[j] === c) {
          if (sql[j + 1] === c) j++;
          else break;
        }
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      const j = sql.indexOf('\n', i);
      const end = j === -1 ? sql.length : j;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '/' && sql[i + 1] === '*') {
      const j = sql.indexOf('*/', i + 2);
      const end = j === -1 ? sql.length : j + 2;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '?' || ((c === '@' || c === ':' || c === '$') && /[A-Za-z_]/.test(sql[i + 1] ?? ''))) {
      let j = i + 1;
      while (j < sql.length && (c === '?' ? /\d/ : ID_CHAR).test(sql[j]!)) j++;
      if (!out.trimEnd().endsWith('+')) out += '+';
      out += sql.slice(i, j);
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}
