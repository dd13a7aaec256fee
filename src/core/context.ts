import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { AgentConfig, Config } from '../config/config.js';
import type { Store } from '../store/store.js';
import type { DnsResolver } from '../uplink/dkim.js';
import type { Mailbox } from '../uplink/mailbox.js';
import type { BridgeMetrics } from './metrics.js';

/** Everything the use cases need, injected so tests can pin the clock and the network. */
export interface BridgeContext {
  config: Config;
  store: Store;
  mailbox: Mailbox;
  log: Logger;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** A monotonic clock in ms, for work budgets (default `performance.now`; a test pins it). */
  monotonic?: () => number;
  /** Uniform [0, 1) for backoff jitter. */
  random: () => number;
  /** undici dispatcher for webhook POSTs (connect timeout set). */
  dispatcher?: Dispatcher;
  /** DNS for local DKIM verification (mailauth resolver shape). */
  dkimResolver: DnsResolver;
  /** Prometheus instruments; absent in unit tests. */
  metrics?: BridgeMetrics;
  /**
   * When this bridge was built (ms, on `now`): a run of mailbox failures the store shows from
   * before it is a previous run's, and this run's first failure starts a new one (src/store/mailbox-state.ts
   * `recordCheck`). Absent: failures carry on from whatever the store shows.
   */
  startedAt?: number;
}

export function agentByName(config: Config, name: string): AgentConfig | undefined {
  return config.agents.find((a) => a.name === name);
}
