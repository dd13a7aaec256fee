/**
 * A binary min-heap of distinct keys with an index of where each sits: the least key is read in
 * O(1), and a key is added, or removed wherever it sits, in O(log n) comparisons (at most one a
 * level going up, two a level going down). Used by src/core/deferrals.ts to know which remembered
 * message to forget first without a scan of them all.
 *
 * The order is `before`, which must be a strict total order over the keys present (no two keys
 * equal), and must not change for a key while it is in the heap (remove it, then add it again).
 */
export class IndexedHeap<K> {
  readonly #keys: K[] = [];
  /** Where each key sits in `#keys`. */
  readonly #at = new Map<K, number>();
  readonly #before: (a: K, b: K) => boolean;
  #compared = 0;

  /** @param before true when `a` comes out before `b` */
  constructor(before: (a: K, b: K) => boolean) {
    this.#before = before;
  }

  /** Keys held. */
  get size(): number {
    return this.#keys.length;
  }

  /** Calls of `before` made so far (the work done: a test's measure). */
  get compared(): number {
    return this.#compared;
  }

  /** The least key, or undefined when empty. */
  peek(): K | undefined {
    return this.#keys[0];
  }

  /** Adds `key`. Throws when it is already in. */
  add(key: K): void {
    if (this.#at.has(key)) throw new Error('IndexedHeap.add: key already in the heap');
    this.#keys.push(key);
    this.#at.set(key, this.#keys.length - 1);
    this.#up(this.#keys.length - 1);
  }

  /** Removes `key` wherever it sits; false when it was not in. */
  remove(key: K): boolean {
    const i = this.#at.get(key);
    if (i === undefined) return false;
    this.#at.delete(key);
    const last = this.#keys.pop()!;
    if (i === this.#keys.length) return true;
    this.#keys[i] = last;
    this.#at.set(last, i);
    if (!this.#up(i)) this.#down(i);
    return true;
  }

  #less(i: number, j: number): boolean {
    this.#compared++;
    return this.#before(this.#keys[i]!, this.#keys[j]!);
  }

  #swap(i: number, j: number): void {
    const a = this.#keys[i]!;
    const b = this.#keys[j]!;
    this.#keys[i] = b;
    this.#keys[j] = a;
    this.#at.set(b, i);
    this.#at.set(a, j);
  }

  /** Moves the key at `i` up while it comes before its parent; true when it moved. */
  #up(i: number): boolean {
    let moved = false;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
      moved = true;
    }
    return moved;
  }

  /** Moves the key at `i` down while a child comes before it. */
  #down(i: number): void {
    const n = this.#keys.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) return;
      const right = left + 1;
      const child = right < n && this.#less(right, left) ? right : left;
      if (!this.#less(child, i)) return;
      this.#swap(i, child);
      i = child;
    }
  }
}
