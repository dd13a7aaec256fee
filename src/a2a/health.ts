import type { Bridge } from '../core/bridge.js';
import { timestamp } from '../core/time.js';
import { VERSION } from './agent-card.js';

/** The `GET /health` body; times are ISO-8601 UTC (core/time.ts), null when not reached yet. */
export interface HealthJson {
  status: 'ok' | 'degraded';
  version: string;
  /**
   * `ok` false when the store could not be read, store.path no longer names the file the bridge
   * opened (`lastCheck` says so, and what to do), its last integrity check found damage, or it
   * cannot be written: `writeError` (the SQLite code and message: a full disk, an I/O error) since
   * `writeErrorSince`, until a write commits again. `fingerprint` names the store file without its
   * path (src/core/store-fingerprint.ts), to a request that presents the bearer only (null to any
   * other): `status` tells by it whether the bridge answering is its config's.
   */
  store: { ok: boolean; lastCheckAt: string | null; lastCheck: string | null; writeError: string | null; writeErrorSince: string | null; fingerprint: string | null };
  mailbox: {
    kind: string;
    lastCheckAt: string | null;
    lastResult: string | null;
    lastError: string | null;
    errorSince: string | null;
    lastSuccessAt: string | null;
    /** When the mail recorded last was seen, and its ledger verdict (a name of the bridge's verdict table, never mail text). */
    lastRecordedAt: string | null;
    lastVerdict: string | null;
  };
  tasks: { open: number; byState: Record<string, number> };
  dispatches: { pending: number; failed: number };
  /**
   * The serving process's id, to a request that presents the bearer only (null to any other), like
   * `store.fingerprint`: `stop` signals it once the fingerprint says the bridge is its config's.
   */
  pid: number | null;
}

/**
 * `GET /health`: store ok (and its last integrity check: src/store/integrity.ts), last mailbox check (time, result, error), open tasks, dispatches
 * pending and failed (docs/architecture.md, "Operating"). Holds no secret, no path and no task
 * content: it is served without auth.
 * @param storeFingerprint the store's name without its path (src/core/store-fingerprint.ts), computed once at start (/health is polled); null for a request without the bearer
 * @param pid this process's id, or null for a request without the bearer
 */
export function health(bridge: Bridge, storeFingerprint: string | null, pid: number | null = null): HealthJson {
  const h = bridge.health();
  const m = h.mailbox;
  const at = (t: number | null | undefined): string | null => (t === null || t === undefined ? null : timestamp(t));
  const byState: Record<string, number> = h.tasksByState;
  const open = (byState.SUBMITTED ?? 0) + (byState.WORKING ?? 0) + (byState.INPUT_REQUIRED ?? 0);
  const w = h.storeWriteFailure;
  const storeOk = h.storeOk && h.storeCheck?.ok !== false && !w;
  return {
    status: storeOk && !m?.lastError ? 'ok' : 'degraded',
    version: VERSION,
    store: {
      ok: storeOk,
      lastCheckAt: at(h.storeCheck?.at),
      lastCheck: h.storeCheck?.detail ?? null,
      writeError: w ? `${w.code}: ${w.message}` : null,
      writeErrorSince: at(w?.since),
      fingerprint: storeFingerprint,
    },
    mailbox: {
      kind: h.mailboxKind,
      lastCheckAt: at(m?.lastCheckAt),
      lastResult: m?.lastResult ?? null,
      lastError: m?.lastError ?? null,
      errorSince: at(m?.errorSince),
      lastSuccessAt: at(m?.lastSuccessAt),
      lastRecordedAt: at(h.lastRecorded?.seenAt),
      lastVerdict: h.lastRecorded?.verdict ?? null,
    },
    tasks: { open, byState },
    dispatches: { pending: h.dispatchesByState.pending ?? 0, failed: h.dispatchesByState.failed ?? 0 },
    pid,
  };
}
