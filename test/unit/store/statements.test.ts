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

describe('stableParams on real SQLite: every query means what it meant as written', () => {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, n INTEGER, r REAL, b BLOB, a, "we$ird" TEXT, [br?k] TEXT, x$y TEXT);
    INSERT INTO t VALUES (1, '10', 10, 1.5, x'00', '10', 'w1', 'b1', 'd1'), (2, '9', 9, 2.0, x'01', 9, 'w2', 'b2', 'd2'),
      (3, 'a_b%', 3, 3, NULL, 'x', 'w3', 'b3', 'd3'), (4, 'A_B', 4, 4, NULL, NULL, 'w4', 'b4', 'd4');`);
  const cases: [string, unknown[] | Record<string, unknown>][] = [
    // Affinity: a TEXT, INTEGER, REAL or untyped column against a number or a numeric string.
    ['SELECT id FROM t WHERE s = ? ORDER BY id', [10]],
    ['SELECT id FROM t WHERE n = ? ORDER BY id', ['10']],
    ['SELECT id FROM t WHERE a = ? ORDER BY id', ['10']],
    ['SELECT id FROM t WHERE a = ? ORDER BY id', [10]],
    ['SELECT id FROM t WHERE r = ? ORDER BY id', ['2']],
    ['SELECT id FROM t WHERE s > ? ORDER BY id', [5]],
    ['SELECT id FROM t WHERE b = ?', [Buffer.from([0])]],
    ['SELECT typeof(?) AS ty, ? AS v', ['12', '12']],
    // IN lists, ranges, row values, IS, CASE, LIMIT/OFFSET with strings.
    ['SELECT id FROM t WHERE s IN (?, ?) ORDER BY id', [10, 9]],
    ['SELECT id FROM t WHERE n IN (?, ?) ORDER BY id', ['10', '9']],
    ['SELECT id FROM t WHERE id BETWEEN ? AND ? ORDER BY id', ['2', '3']],
    ['SELECT id FROM t WHERE (id, s) = (?, ?)', [2, '9']],
    ['SELECT id FROM t WHERE s IS ? ORDER BY id', [null]],
    [`SELECT CASE ? WHEN 1 THEN 'one' ELSE 'other' END AS v`, ['1']],
    ['SELECT id FROM t ORDER BY id LIMIT ? OFFSET ?', ['2', 1]],
    ['SELECT -? AS v, - ? AS w, 1-? AS x, 1 - -? AS z, 1+? AS p', [2, 2, 2, 2, 2]],
    // LIKE, ESCAPE, GLOB, COLLATE.
    ['SELECT id FROM t WHERE s LIKE ? ORDER BY id', ['a\\_b%']],
    ['SELECT id FROM t WHERE s LIKE ? ESCAPE ? ORDER BY id', ['a\\_b%', '\\']],
    ['SELECT id FROM t WHERE s GLOB ? ORDER BY id', ['[aA]*']],
    ['SELECT id FROM t WHERE s = ? COLLATE NOCASE ORDER BY id', ['a_b']],
    // Named parameters, a ? in a literal or a comment.
    ['SELECT id FROM t WHERE id = @id OR s = :s OR n = $n ORDER BY id', { id: 1, s: '9', n: 3 }],
    [`SELECT id FROM t WHERE s = 'x?' OR s = ? -- ? here`, ['9']],
    ['SELECT id FROM t WHERE s = ? /* ? :p */', ['9']],
    // Names holding a ? or a $: bracketed, double-quoted, bare, and a parameter's own name.
    ['SELECT [br?k] AS v FROM t WHERE id = ?', [1]],
    ['SELECT "we$ird" AS v FROM t WHERE id = ?', [1]],
    ['SELECT x$y AS v FROM t WHERE id = ?', [2]],
    ['SELECT id FROM t WHERE id = @a$b', { a$b: 3 }],
  ];
  it.each(cases)('%s', (sql, params) => {
    const bind = (s: string) => (Array.isArray(params) ? db.prepare(s).all(...params) : db.prepare(s).all(params));
    expect(bind(stableParams(sql))).toEqual(bind(sql));
  });
});
