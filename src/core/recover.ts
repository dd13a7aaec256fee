import type { BridgeContext } from './context.js';

/**
 * Start-up recovery: a dispatch that was in flight when the process died is resumed
 * with the same `webhook-id` on the next step, instead of waiting out its lease; large values
 * written for a reply whose decision was never committed (the process stopped in between:
 * src/store/large-values.ts) are deleted and counted. Everything else needs no repair: every state
 * change was committed in one transaction, or not at all.
 */
export function recoverAtStart(ctx: BridgeContext): void {
  const n = ctx.store.tx((tx) => tx.dispatch.recoverInterrupted(ctx.now()));
  if (n) ctx.log.warn({ attempts: n }, 'webhook attempts were interrupted by a stop; their dispatches are due again');
  const orphans = ctx.store.tx((tx) => tx.largeValues.dropOrphans(ctx.now()));
  if (orphans.count) ctx.log.warn({ values: orphans.count, size: orphans.size }, 'large values written for replies never recorded (a stop between the writing and the decision) were deleted');
}
