import { describe, expect, it } from 'vitest';
import { OtherCommits } from '../../../src/core/other-commits.js';

/** A store whose other processes' commits the test counts by hand. */
function fakeStore() {
  const s = { commits: 0, reads: 0, generation: () => ++s.reads, otherCommits: () => s.commits };
  return s;
}

describe('OtherCommits', () => {
  it('calls each listener once per look that finds another process committed, with one shared map per look; none after it unsubscribes', () => {
    const store = fakeStore();
    const w = new OtherCommits(store, 3_600_000);
    const heard: Map<string, unknown>[] = [];
    const seen2: Map<string, unknown>[] = [];
    const off1 = w.on((m) => heard.push(m));
    const off2 = w.on((m) => seen2.push(m));
    w.look();
    expect(heard).toHaveLength(0);
    store.commits = 2;
    w.look();
    w.look();
    expect(heard).toHaveLength(1);
    expect(seen2[0]).toBe(heard[0]);
    off1();
    store.commits = 3;
    w.look();
    expect(heard).toHaveLength(1);
    expect(seen2).toHaveLength(2);
    off2();
  });

  it('a listener that throws (the store busy) makes the next look call every listener again', () => {
    const store = fakeStore();
    const w = new OtherCommits(store, 3_600_000);
    let fail = true;
    const calls: string[] = [];
    const off1 = w.on(() => {
      calls.push('a');
      if (fail) throw new Error('SQLITE_BUSY');
    });
    const off2 = w.on(() => calls.push('b'));
    store.commits = 1;
    w.look();
    fail = false;
    w.look();
    w.look();
    expect(calls).toEqual(['a', 'b', 'a', 'b']);
    off1();
    off2();
  });

  it('the commits made before the first listener came are not announced to it', () => {
    const store = fakeStore();
    store.commits = 5;
    const w = new OtherCommits(store, 3_600_000);
    const heard: unknown[] = [];
    const off = w.on((m) => heard.push(m));
    w.look();
    expect(heard).toHaveLength(0);
    off();
  });

  it('a look whose store read throws (closed, or busy) calls no listener and does not throw; the next look hears the commit', () => {
    const store = fakeStore();
    let broken = false;
    const w = new OtherCommits({ generation: () => (broken ? (() => { throw new Error('The database connection is not open'); })() : 0), otherCommits: () => store.commits }, 3_600_000);
    const heard: unknown[] = [];
    const off = w.on((m) => heard.push(m));
    broken = true;
    store.commits = 1;
    expect(() => w.look()).not.toThrow();
    expect(heard).toHaveLength(0);
    broken = false;
    w.look();
    expect(heard).toHaveLength(1);
    off();
  });
});
