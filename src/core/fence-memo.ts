import { fenceAgentText, type TextChanges } from './untrusted-text.js';

/**
 * The fenced text of each reply, computed once per reply rather than once per view build
 * (attack review 4, 2026-12-02: a 4 MB reply was cleaned and fenced twice per GetTask, history
 * and artifact, 0.5–0.7 s each, and once per push delivery).
 *
 * Keyed by the reply's stable identity: its ledger row, its fence nonce (drawn once when the reply
 * is applied: src/core/apply-reply.ts), the agent's untrusted label, and the length of the text
 * shown (the whole reply, or the head of a progress note: src/core/task-view.ts). A reply row is
 * never changed once written (src/store/replies.ts has no UPDATE), so the same key always means
 * the same source text. A reply stored before replies had rows (migration 7) gets a fresh nonce per
 * view and is not memoised. The marking rules are those of {@link fenceAgentText} unchanged
 * (docs/agent-text.md): only when it runs changes.
 *
 * Process-wide, bounded in entries ({@link FENCE_MEMO_MAX_ENTRIES}) and in weight
 * ({@link FENCE_MEMO_MAX_WEIGHT}, the UTF-16 code units of the fenced texts kept); least recently
 * used first out. One text heavier than the whole bound is fenced and not kept.
 */

/** Most fenced texts kept. */
export const FENCE_MEMO_MAX_ENTRIES = 256;

/**
 * Most UTF-16 code units kept, summed over the fenced texts: 24 Mi, room for two replies of the
 * default `mailbox.max_message_bytes` (10 MB) — about 24 MiB of memory for ASCII text (V8 keeps
 * one byte per character), 48 MiB at most.
 */
export const FENCE_MEMO_MAX_WEIGHT = 24 * 1024 * 1024;

export interface Fenced {
  text: string;
  changes: TextChanges;
}

export class FenceMemo {
  readonly #entries = new Map<string, Fenced>();
  #weight = 0;
  /** Texts fenced (misses), since the process started: the seam tests count. */
  fenced = 0;

  constructor(
    private readonly maxEntries = FENCE_MEMO_MAX_ENTRIES,
    private readonly maxWeight = FENCE_MEMO_MAX_WEIGHT,
  ) {}

  /**
   * The fenced form of `text`, a reply's text or a head of it (docs/agent-text.md, "The fence").
   * The `changes` returned are the caller's own copy.
   * @param reply the reply's ledger row id and fence nonce
   * @param onFence called when the text is fenced now (not from the memo): a metric
   */
  fence(label: string, reply: { ledgerId: number; nonce: string }, text: string, onFence?: () => void): Fenced {
    const key = `${reply.ledgerId}\0${reply.nonce}\0${text.length}\0${label}`;
    const hit = this.#entries.get(key);
    if (hit) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return { text: hit.text, changes: { ...hit.changes } };
    }
    const made = fenceAgentText(text, { label, nonce: reply.nonce });
    this.fenced++;
    onFence?.();
    if (made.text.length <= this.maxWeight) {
      this.#entries.set(key, made);
      this.#weight += made.text.length;
      while (this.#entries.size > this.maxEntries || this.#weight > this.maxWeight) {
        const [oldest, e] = this.#entries.entries().next().value!;
        this.#entries.delete(oldest);
        this.#weight -= e.text.length;
      }
    }
    return { text: made.text, changes: { ...made.changes } };
  }

  /** Fenced texts kept now. */
  get size(): number {
    return this.#entries.size;
  }

  /** UTF-16 code units kept now. */
  get weight(): number {
    return this.#weight;
  }
}

/** The bridge process's memo (every view of every store in this process reads through it). */
export const fenceMemo = new FenceMemo();
