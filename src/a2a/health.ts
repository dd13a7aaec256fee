import type { Bridge } from '../core/bridge.js';
import { timestamp } from '../core/time.js';
import { failedDispatchCount } from '../store/attempts.js';
import { getMailboxState } from '../store/mailbox-state.js';
import { VERSION } from './agent-card.js';

/** The `GET /health` body; times are ISO-8601 UTC (core/time.ts), null when not reached yet. */
export interface HealthJson {
  status: 'ok' | 'degraded';
  version: string;
  store: { ok: boolean };
  mailbox: {
    kind: string;
    lastCheckAt: string | null;
    lastResult: string | null;
    lastError: string | null;
    errorSince: string | null;
    lastSuccessAt: string | null;
  };
  tasks: { open: number; byState: Record<string, number> };
  dispatches: { pending: number; failed: number };
}

/**
 * `GET /health` (BRIEF §3): store ok, last mailbox check (time, result, error), open tasks,
 * failed dispatches. Holds no secret and no task content: it is served without auth.
 */
export function health(bridge: Bridge): HealthJson {
  const { db, mailbox } = bridge.ctx;
  let storeOk = true;
  let byState: Record<string, number> = {};
  let failedDispatches = 0;
  let pendingDispatches = 0;
  try {
    const rows = db.prepare(`SELECT state, count(*) AS n FROM tasks GROUP BY state`).all() as { state: string; n: number }[];
    byState = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    failedDispatches = failedDispatchCount(db);
    pendingDispatches = (db.prepare(`SELECT count(*) AS n FROM turns WHERE dispatch_state = 'pending'`).get() as { n: number }).n;
  } catch {
    storeOk = false;
  }
  const m = storeOk ? getMailboxState(db, mailbox.folder) : null;
  const at = (t: number | null | undefined): string | null => (t === null || t === undefined ? null : timestamp(t));
  const open = (byState.SUBMITTED ?? 0) + (byState.WORKING ?? 0) + (byState.INPUT_REQUIRED ?? 0);
  return {
    status: storeOk && !m?.lastError ? 'ok' : 'degraded',
    version: VERSION,
    store: { ok: storeOk },
    mailbox: {
      kind: mailbox.kind,
      lastCheckAt: at(m?.lastCheckAt),
      lastResult: m?.lastResult ?? null,
      lastError: m?.lastError ?? null,
      errorSince: at(m?.errorSince),
      lastSuccessAt: at(m?.lastSuccessAt),
    },
    tasks: { open, byState },
    dispatches: { pending: pendingDispatches, failed: failedDispatches },
  };
}
