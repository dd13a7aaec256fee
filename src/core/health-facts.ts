import type { DispatchState } from '../store/dispatch-state.js';
import type { MailboxState } from '../store/mailbox-state.js';
import type { TaskState } from '../store/task-state.js';
import type { BridgeContext } from './context.js';
import type { StoreWriteFailure } from '../store/store.js';
import type { StoreCheck } from './store-upkeep.js';

/** What `GET /health` shows (src/a2a/health.ts renders it); counts are absent for states with none. */
export interface HealthFacts {
  /** The store answered the counts (false: it could not be read). */
  storeOk: boolean;
  tasksByState: Partial<Record<TaskState, number>>;
  dispatchesByState: Partial<Record<DispatchState, number>>;
  mailboxKind: 'imap' | 'maildir';
  /** The last check's outcome; null when the store could not be read. */
  mailbox: MailboxState | null;
  /** The mail recorded last (Store.ledger.latest); null when none was, or the store could not be read. */
  lastRecorded: { seenAt: number; verdict: string } | null;
  /** The store's checks (StoreUpkeep.lastCheck): not ok while store.path is not the bridge's file, else the last integrity check (quick_check); null before either. */
  storeCheck: StoreCheck | null;
  /** The store could not be written since then (disk full, I/O error): Store.writeFailure; null when the last write committed. */
  storeWriteFailure: StoreWriteFailure | null;
}

/**
 * The facts `GET /health` shows, read from the store's counts (kept by triggers: the same cost at
 * any store size); never throws — a store that cannot be read gives `storeOk: false`.
 * @param storeCheck the store's checks (src/core/store-upkeep.ts `lastCheck`), null before either
 */
export function healthFacts(ctx: BridgeContext, storeCheck: StoreCheck | null): HealthFacts {
  const { store, mailbox } = ctx;
  try {
    return {
      storeOk: true,
      tasksByState: store.stats.tasksByState(),
      dispatchesByState: store.stats.dispatchesByState(),
      mailboxKind: mailbox.kind,
      mailbox: store.mailbox.state(mailbox.folder),
      lastRecorded: store.ledger.latest(),
      storeCheck,
      storeWriteFailure: store.writeFailure(),
    };
  } catch {
    return { storeOk: false, tasksByState: {}, dispatchesByState: {}, mailboxKind: mailbox.kind, mailbox: null, lastRecorded: null, storeCheck, storeWriteFailure: store.writeFailure() };
  }
}
