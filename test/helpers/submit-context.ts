/**
 * A bridge context with what `submit` (src/core/submit.ts) reads — a store of its own in memory,
 * a fixed clock, the names the envelope carries — and the agent's question recorded as
 * apply-reply records it, for tests of the context rules without a mailbox or a webhook.
 */
import { afterEach } from 'vitest';
import type { AgentConfig } from '../../src/config/config.js';
import type { BridgeContext } from '../../src/core/context.js';
import { submit, type SendOutcome } from '../../src/core/submit.js';
import { Store } from '../../src/store/store.js';

export const NOW = Date.parse('2026-06-01T12:00:00Z');
export const AGENT = { name: 'grok', tag: 'GROK', address: 'agent@agent.example', deadlineMs: 3_600_000, maxOpenTasks: 20, webhook: { maxPerMinute: 10 } } as unknown as AgentConfig;

const stores: Store[] = [];
afterEach(() => stores.splice(0).forEach((s) => s.close()));

export function submitContext(): BridgeContext {
  const store = Store.open(':memory:');
  stores.push(store);
  const config = { server: { name: 'a2a-mailbridge', pollWords: ['status'] }, mailbox: { address: 'me@example.com', maxAttachmentBytes: 1024 * 1024 } };
  return { store, now: () => NOW, config } as unknown as BridgeContext;
}

let n = 0;

/** A SendMessage of `text` on context `ctx-1`, with a new messageId (or `messageId`). */
export function send(ctx: BridgeContext, text: string, messageId = `m${++n}`): SendOutcome {
  return submit(ctx, AGENT, { messageId, contextId: 'ctx-1', text, contentSha256: `sha-${messageId}-${text.length}`, caller: 'test' });
}

/** The agent's question on the task's current turn: its reply recorded on the turn, the task INPUT_REQUIRED. */
export function agentAsks(ctx: BridgeContext, taskId: string, text: string): void {
  ctx.store.tx((tx) => {
    const task = tx.tasks.get(taskId)!;
    const ledgerId = tx.ledger.record({
      source: `src-${++n}`, seenAt: NOW, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 0, rawSha256: `raw-${n}`, raw: null,
      agent: 'grok', taskId, verdict: 'applied:input-required', reason: 'test',
    })!;
    tx.turns.recordReply(taskId, task.turn, { status: 'input-required', text, ledgerId, at: NOW, revokeToken: true });
    tx.tasks.transition(task, 'INPUT_REQUIRED', { at: NOW, cause: 'the agent asked', deadlineAt: null });
  });
}
