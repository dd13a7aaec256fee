/**
 * The push bodies (src/core/push-bodies.ts): one render per key, shared by every delivery and
 * retry that asks while the task has not changed; a task change drops the task's bodies; renders
 * run one per turn of the event loop; bodies over the byte bound are not kept.
 */
import { describe, expect, it } from 'vitest';
import { PushBodies } from '../../../src/core/push-bodies.js';

describe('PushBodies', () => {
  it('renders a key once for every delivery and retry that asks for it, again after the task changed', async () => {
    const bodies = new PushBodies();
    let renders = 0;
    const render = (): Buffer => Buffer.from(`body ${++renders}`);
    const asked = await Promise.all(Array.from({ length: 10 }, () => bodies.body('t1', 'COMPLETED@5', render)));
    expect(new Set(asked).size).toBe(1);
    expect(await bodies.body('t1', 'COMPLETED@5', render)).toBe(asked[0]); // a retry
    expect([renders, bodies.rendered, bodies.bytes]).toEqual([1, 1, 6]);
    bodies.changed('t2');
    expect(await bodies.body('t1', 'COMPLETED@5', render)).toBe(asked[0]);
    bodies.changed('t1');
    expect(bodies.bytes).toBe(0);
    expect((await bodies.body('t1', 'COMPLETED@5', render)).toString()).toBe('body 2');
  });

  it('runs each render in its own turn: what was queued during one render runs before the next', async () => {
    const bodies = new PushBodies();
    const seen: string[] = [];
    const render = (name: string) => (): Buffer => {
      seen.push(name);
      setImmediate(() => seen.push(`io after ${name}`));
      return Buffer.from(name);
    };
    await Promise.all(['a', 'b', 'c'].map((k) => bodies.body(k, k, render(k))));
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['a', 'io after a', 'b', 'io after b', 'c', 'io after c']);
  });

  it('keeps at most maxBytes, least recently used out; a heavier body is shared by its waiters only', async () => {
    const bodies = new PushBodies(10);
    let renders = 0;
    const of = (n: number) => (): Buffer => (renders++, Buffer.alloc(n));
    await bodies.body('t', 'kept', of(4));
    const [x, y] = await Promise.all([bodies.body('t', 'big', of(11)), bodies.body('t', 'big', of(11))]);
    expect(x).toBe(y);
    expect([renders, bodies.bytes]).toEqual([2, 4]); // the heavy body drops nothing else
    bodies.changed('t');
    await bodies.body('t', 'a', of(6));
    await bodies.body('t', 'b', of(4));
    await bodies.body('t', 'a', of(6)); // a used last: b goes first
    await bodies.body('t', 'c', of(4));
    expect(bodies.bytes).toBe(10);
    renders = 0;
    await bodies.body('t', 'a', of(6));
    await bodies.body('t', 'c', of(4));
    expect(renders).toBe(0);
    await bodies.body('t', 'b', of(4));
    expect(renders).toBe(1);
  });

  it('a render that throws rejects its waiters and is not kept', async () => {
    const bodies = new PushBodies();
    await expect(bodies.body('t', 'k', () => { throw new Error('gone'); })).rejects.toThrow('gone');
    expect((await bodies.body('t', 'k', () => Buffer.from('ok'))).toString()).toBe('ok');
  });
});
