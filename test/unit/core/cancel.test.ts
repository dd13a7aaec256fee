import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/config.js';
import { cancelTask } from '../../../src/core/cancel.js';
import type { BridgeContext } from '../../../src/core/context.js';
import { BridgeError } from '../../../src/core/errors.js';
import { IDS, buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const REJECTED_ID = '66666666-0000-4000-8000-000000000006';

/** The fixture's tasks, and one the agent declined (REJECTED), in a store of their own. */
function fixture(): BridgeContext {
  const store = buildStore(':memory:', NOW);
  store.tx((tx) => {
    const working = tx.tasks.get(IDS.oldWorking)!;
    tx.tasks.insert({ ...working, id: REJECTED_ID, contextId: 'ctx-rejected' });
    tx.tasks.transition(tx.tasks.get(REJECTED_ID)!, 'REJECTED', { at: NOW - 60_000, cause: 'the agent declined the task in reply (ledger #9)', deadlineAt: null });
  });
  return { store, now: () => NOW } as BridgeContext;
}

const refusal = (ctx: BridgeContext, agent: string, id: string): BridgeError => {
  try {
    cancelTask(ctx, { name: agent } as AgentConfig, id);
  } catch (err) {
    if (err instanceof BridgeError) return err;
    throw err;
  }
  throw new Error(`task ${id} was canceled`);
};

describe('CancelTask of a task in a terminal state (A2A v1.0 §3.1.5: TaskNotCancelableError)', () => {
  const ctx = fixture();
  it.each([
    ['CANCELED', 'grok', IDS.oldCanceled, `Task ${IDS.oldCanceled} is already canceled; there is nothing more to cancel`],
    ['COMPLETED', 'grok', IDS.oldCompleted, `Task ${IDS.oldCompleted} cannot be canceled: it is already completed`],
    ['FAILED', 'claude', IDS.recentFailed, `Task ${IDS.recentFailed} cannot be canceled: it has already failed`],
    ['REJECTED', 'grok', REJECTED_ID, `Task ${REJECTED_ID} cannot be canceled: the agent already rejected it`],
  ])('%s: says so in words for that state, code task-not-cancelable, nothing changed', (state, agent, id, message) => {
    expect(ctx.store.tasks.get(id)!.state).toBe(state);
    const err = refusal(ctx, agent, id);
    expect([err.code, err.message]).toEqual(['task-not-cancelable', message]);
    expect(ctx.store.tasks.get(id)!.state).toBe(state);
  });
});
