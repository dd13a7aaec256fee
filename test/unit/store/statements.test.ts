/**
 * Statements compiled with `+?` parameters (src/store/statements.ts): the rewrite touches only
 * parameters, never literals, quoted names or comments, and leaves each query's answer and its
 * use of an index as they were.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { stableParams, stmt } from '../../../src/store/statements.js';

describe('stableParams', () => {
  it('writes a unary + before each parameter, in every form SQLite reads', () => {
    expect(stableParams('SELECT 1 FROM t WHERE a = ? AND b = ?2 AND c = @c AND d = :d AND e = $e LIMIT @limit')).toBe(
      'SELECT 1 FROM t WHERE a = +? AND b = +?2 AND c = +@c AND d = +:d AND e = +$e LIMIT +@limit',
    );
  });

  it('leaves literals, quoted identifiers, comments and parameters already written +? alone', () => {
    const sql = `SELECT '?', 'it''s @x :y', "a?b" FROM t -- where ? is
      WHERE v LIKE 'applied:%' /* @p */ AND w = +? AND x = ?`;
    expect(stableParams(sql)).toBe(`SELECT '?', 'it''s @x :y', "a?b" FROM t -- where ? is
      WHERE v LIKE 'applied:%' /* @p */ AND w = +? AND x = +?`);
  });

  it('gives the same rows, by the same index, as the statement as written', () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE a (id TEXT PRIMARY KEY, n INTEGER) STRICT; CREATE TABLE b (a_id TEXT NOT NULL, k INTEGER NOT NULL, PRIMARY KEY (a_id, k)) STRICT;
      INSERT INTO a VALUES ('x', 1), ('y', 2), ('10', 3); INSERT INTO b VALUES ('x', 1), ('x', 2), ('y', 1), ('10', 1);`);
    const sql = `SELECT a.id, b.k FROM a JOIN b ON b.a_id = a.id WHERE a.id = @id AND b.k >= @k ORDER BY b.k`;
    for (const params of [{ id: 'x', k: 1 }, { id: 'x', k: 2 }, { id: 'nope', k: 0 }, { id: '10', k: 1.0 }]) {
      expect(stmt(db, sql).all(params)).toEqual(db.prepare(sql).all(params));
    }
    // An integer column compared with a bound number, or a text column with a numeric string: the column's affinity applies as before.
    expect(stmt(db, `SELECT id FROM a WHERE n = ?`).all(2.0)).toEqual([{ id: 'y' }]);
    expect(stmt(db, `SELECT id FROM a WHERE id = ?`).all('10')).toEqual([{ id: '10' }]);
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${stableParams(sql)}`).all({ id: 'x', k: 1 }) as { detail: string }[]).map((r) => r.detail);
    const asWritten = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ id: 'x', k: 1 }) as { detail: string }[]).map((r) => r.detail);
    expect(plan).toEqual(asWritten);
    expect(plan.join('; ')).toMatch(/SEARCH a USING COVERING INDEX sqlite_autoindex_a_1 \(id=\?\); SEARCH b USING COVERING INDEX sqlite_autoindex_b_1 \(a_id=\? AND k>\?\)/);
    db.close();
  });
});
