import { randomUUID } from 'node:crypto';
import type { AgentConfig } from '../config/config.js';
import { backoffMs, postWebhook } from '../downlink/deliver.js';
import { pushDispatcher, pushUrlProblem } from '../downlink/push-target.js';
import type { PushConfigRow, PushDeliveryRow } from '../store/push.js';

export type { PushConfigRow };
import type { StoreTx } from '../store/store.js';
import type { Dispatcher } from 'undici';
import { agentByName, type BridgeContext } from './context.js';
import { BridgeError } from './errors.js';
import { PushBodies } from './push-bodies.js';
import { viewTask, type TaskView } from './task-view.js';

/**
 * Push notifications (A2A v1.0 §3.1.7–3.1.10, §4.3.3; docs/push.md): the callers' configurations
 * per task, and their delivery — one POST per change of the task, in order per configuration,
 * retried with the webhook's backoff, each attempt counted in the store before the POST.
 */

/** A configuration as the caller gives it, whatever its dialect. */
export interface PushConfigInput {
  /** The caller's id for it; a UUID when absent. */
  id?: string;
  url: string;
  token?: string;
  /** `Authorization: <scheme> <credentials>` (v0.3: the first of `schemes`). */
  authScheme?: string;
  authCredentials?: string;
  dialect: '1.0' | '0.3';
}

/** Configurations one task may have. */
export const MAX_PUSH_CONFIGS_PER_TASK = 10;
/** Attempts of one delivery before it is given up (A2A v1.0 §4.3.3: "MAY stop … after a configured number of consecutive failures"). */
export const PUSH_MAX_ATTEMPTS = 8;
/** A delivery older than this, in ms, is given up. */
export const PUSH_MAX_AGE_MS = 3600_000;
/** Per POST, in ms (§4.3.3 recommends 10–30 s). */
export const PUSH_TIMEOUT_MS = 10_000;
/** POSTs in flight at most; a free slot is filled at once (a receiver that hangs holds its slot only). */
const PUSH_CONCURRENCY = 16;
/** POSTs in flight to one origin (scheme, host and port) at most: one hung receiver cannot take every slot. */
const PUSH_PER_ORIGIN = 4;
/** Due deliveries looked at per fill (first attempts before retries, oldest first). */
const PUSH_LOOKAHEAD = 100;

/**
 * Checks a configuration before it is stored.
 * @throws BridgeError invalid-request (a URL the bridge may not POST to, a header value that cannot be sent)
 */
export function checkPushConfig(ctx: BridgeContext, c: PushConfigInput): void {
  const problem = pushUrlProblem(c.url, ctx.config.server.pushAllowHosts);
  if (problem) throw new BridgeError('invalid-request', `the push notification url ${problem}`);
  for (const [name, v] of [['token', c.token], ['authentication scheme', c.authScheme], ['authentication credentials', c.authCredentials]] as const) {
    // Sent as header values: no control characters (RFC 9110 §5.5).
    // eslint-disable-next-line no-control-regex -- control characters are what this refuses
    if (v !== undefined && /[\0-\x1f\x7f]/.test(v)) throw new BridgeError('invalid-request', `the push notification ${name} has control characters`);
  }
  if (c.authScheme !== undefined && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(c.authScheme)) {
    throw new BridgeError('invalid-request', 'the push notification authentication scheme must be a token such as Bearer (RFC 9110 §11.1)');
  }
}

/** Stores a configuration of `taskId` inside the caller's transaction. @throws BridgeError limit-reached past {@link MAX_PUSH_CONFIGS_PER_TASK} */
export function storePushConfig(tx: StoreTx, taskId: string, c: PushConfigInput, at: number): PushConfigRow {
  const id = c.id ?? randomUUID();
  const existing = tx.push.configs(taskId);
  if (!existing.some((e) => e.id === id) && existing.length >= MAX_PUSH_CONFIGS_PER_TASK) {
    throw new BridgeError('limit-reached', `task ${taskId} already has ${MAX_PUSH_CONFIGS_PER_TASK} push notification configurations; delete one first`, {
      metadata: { limit: 'push configurations per task', value: String(MAX_PUSH_CONFIGS_PER_TASK) },
    });
  }
  const row: PushConfigRow = {
    taskId,
    id,
    dialect: c.dialect,
    url: c.url,
    token: c.token ?? null,
    authScheme: c.authScheme ?? null,
    authCredentials: c.authCredentials ?? null,
    createdAt: at,
  };
  tx.push.upsertConfig(row);
  return row;
}

/** Renders the body of one notification in a configuration's dialect (src/a2a/push-wire.ts, injected by the composition root). */
export type PushRenderer = (task: TaskView, dialect: '1.0' | '0.3') => unknown;

/**
 * Sends the deliveries the store holds: on every task change, after each round while some are
 * due, and on a timer for retries. Holds the watcher on demand while a task that is not finished
 * has a configuration (its next change comes from a mail no caller will ask for).
 */
export class PushWorker {
  #render: PushRenderer | null = null;
  /** Deliveries being sent, by seq, with their configuration's key and origin. */
  readonly #inFlight = new Map<number, { config: string; origin: string; done: Promise<void> }>();
  #timer: NodeJS.Timeout | null = null;
  #release: (() => void) | null = null;
  #dispatcher: Dispatcher | null = null;
  #closed = false;
  /** Rendered bodies, one per change, dialect and agent, shared by the task's configurations and retries (src/core/push-bodies.ts). */
  readonly bodies = new PushBodies();
  /**
   * What the last kick read: the store's generation after it, and the earliest pending delivery's
   * due time then (ms since the epoch, null for none). A refresh with the same generation and
   * nothing due asks the store nothing ({@link refresh}).
   */
  #seen: { generation: number; nextDueAt: number | null } = { generation: -1, nextDueAt: null };

  /** @param observeClock moves pending attempt times back after the clock stepped back (src/core/clock-steps.ts); run before each round */
  constructor(
    private readonly ctx: BridgeContext,
    private readonly watchWhile: () => () => void,
    private readonly observeClock: () => void = () => undefined,
  ) {
    ctx.store.onTaskChange((c) => this.bodies.changed(c.task.id));
  }

  /** Starts delivering, with bodies rendered by `render`. Without it (one-shot CLI commands) deliveries stay queued. */
  start(render: PushRenderer): void {
    this.#render = render;
    this.kick();
  }

  /**
   * The request-driven step (every A2A call's refresh): a kick only when the store changed since
   * the last one (Store.generation: a new configuration, a queued delivery, another process's
   * commit) or a delivery fell due — so a call while nothing changed asks the store nothing.
   */
  refresh(): void {
    if (!this.#render || this.#closed) return;
    const { generation, nextDueAt } = this.#seen;
    if (generation === this.ctx.store.generation() && (nextDueAt === null || nextDueAt > this.ctx.now())) return;
    this.kick();
  }

  /**
   * When {@link refresh} next has work (ms since the epoch): now when the store changed since the
   * last kick, the earliest pending delivery's due time, +Infinity for none (or not started).
   */
  dueAt(): number {
    if (!this.#render || this.#closed) return Number.POSITIVE_INFINITY;
    const { generation, nextDueAt } = this.#seen;
    if (generation !== this.ctx.store.generation()) return Number.NEGATIVE_INFINITY;
    return nextDueAt ?? Number.POSITIVE_INFINITY;
  }

  /** Fills the free slots with due deliveries now (after a task change, a finished POST, the retry timer). */
  kick(): void {
    if (!this.#render || this.#closed) return;
    this.observeClock();
    this.syncDemand();
    try {
      this.#fill();
    } catch (err) {
      this.ctx.log.error({ err: (err as Error).message }, 'push delivery round failed');
    }
    this.schedule();
  }

  /**
   * Starts due deliveries while slots are free: first attempts before retries, then oldest first
   * (a receiver that keeps failing never holds back a first notification to another); one
   * configuration's deliveries one at a time and in order (`due()` gives its oldest pending only);
   * at most {@link PUSH_PER_ORIGIN} to one origin.
   */
  #fill(): void {
    if (this.#inFlight.size >= PUSH_CONCURRENCY) return;
    const busy = new Set([...this.#inFlight.values()].map((f) => f.config));
    const perOrigin = new Map<string, number>();
    for (const f of this.#inFlight.values()) perOrigin.set(f.origin, (perOrigin.get(f.origin) ?? 0) + 1);
    for (const d of this.ctx.store.push.due(this.ctx.now(), PUSH_LOOKAHEAD)) {
      if (this.#inFlight.size >= PUSH_CONCURRENCY) break;
      const config = `${d.taskId}\0${d.configId}`;
      if (this.#inFlight.has(d.seq) || busy.has(config)) continue;
      const origin = originOf(this.ctx.store.push.config(d.taskId, d.configId)?.url);
      if ((perOrigin.get(origin) ?? 0) >= PUSH_PER_ORIGIN) continue;
      perOrigin.set(origin, (perOrigin.get(origin) ?? 0) + 1);
      busy.add(config);
      const done = this.deliver(d)
        .catch((err: unknown) => this.ctx.log.error({ err: (err as Error).message, seq: d.seq }, 'push delivery failed'))
        .finally(() => {
          this.#inFlight.delete(d.seq);
          this.kick();
        });
      this.#inFlight.set(d.seq, { config, origin, done });
    }
  }

  /** Holds or lets go of the watcher on demand as push configurations of open tasks come and go. */
  syncDemand(): void {
    let active: boolean;
    try {
      active = !this.#closed && this.ctx.store.push.active();
    } catch {
      return; // the store is busy or closed: keep what we have
    }
    if (active && !this.#release) this.#release = this.watchWhile();
    else if (!active && this.#release) {
      this.#release();
      this.#release = null;
    }
  }

  private schedule(): void {
    if (this.#closed) return;
    const next = this.ctx.store.push.nextDueAt();
    this.#seen = { generation: this.ctx.store.generation(), nextDueAt: next };
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (next === null) return;
    const wait = next - this.ctx.now();
    if (wait <= 0 && this.#inFlight.size > 0) return; // due but no slot: the next finished POST fills it
    this.#timer = setTimeout(() => this.kick(), Math.max(0, wait));
    this.#timer.unref();
  }

  private async deliver(d: PushDeliveryRow): Promise<void> {
    const { store } = this.ctx;
    const now = this.ctx.now();
    const claim = store.tx((tx) => {
      const cur = tx.push.delivery(d.seq);
      const config = tx.push.config(d.taskId, d.configId);
      const task = tx.tasks.get(d.taskId);
      const agent = task ? agentByName(this.ctx.config, task.agent) : undefined;
      if (!cur || cur.state !== 'pending' || (cur.nextAttemptAt ?? 0) > now) return null;
      if (!config || !task || !agent) {
        tx.push.finishAttempt(d.seq, { state: 'dropped', nextAttemptAt: null, httpStatus: null, error: 'the configuration or its task is gone', at: now });
        return null;
      }
      if (cur.attempts >= PUSH_MAX_ATTEMPTS || now - cur.changedAt > PUSH_MAX_AGE_MS) {
        tx.push.finishAttempt(d.seq, { state: 'failed', nextAttemptAt: null, httpStatus: cur.httpStatus, error: `given up after ${cur.attempts} attempts: ${cur.error ?? 'no answer'}`, at: now });
        return null;
      }
      tx.push.startAttempt(d.seq, now + PUSH_TIMEOUT_MS + 30_000);
      return { config, task, agent, attempt: cur.attempts + 1 };
    });
    if (!claim) return;
    const { agent, task, config } = claim;
    const key = `${config.dialect}\0${agent.name}\0${d.taskState}\0${d.changedAt}\0${JSON.stringify(task)}`;
    const render = this.#render!;
    const body = await this.bodies.body(
      d.taskId,
      key,
      () => Buffer.from(JSON.stringify(render(this.snapshot(agent, d.taskId), config.dialect)), 'utf8'),
      () => this.ctx.metrics?.viewRenders.inc({ stage: 'push' }),
    );
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'a2a-mailbridge' };
    if (claim.config.authScheme) headers.authorization = claim.config.authCredentials ? `${claim.config.authScheme} ${claim.config.authCredentials}` : claim.config.authScheme;
    if (claim.config.token) headers['x-a2a-notification-token'] = claim.config.token;
    const r = await postWebhook(new URL(claim.config.url), headers, body, PUSH_TIMEOUT_MS, (this.#dispatcher ??= pushDispatcher(this.ctx.config.server.pushAllowHosts, PUSH_TIMEOUT_MS)), this.ctx.now);
    this.ctx.metrics?.attempts.inc({ outcome: r.outcome, kind: 'push' });
    const at = this.ctx.now();
    // Ids, states and the outcome only: the URL and the caller's credentials stay out of the log.
    const fields = { task: d.taskId, config: d.configId, seq: d.seq, state: d.taskState, attempt: claim.attempt, outcome: r.outcome, status: r.httpStatus, error: r.error };
    store.tx((tx) => {
      if (r.outcome === 'accepted') tx.push.finishAttempt(d.seq, { state: 'delivered', nextAttemptAt: null, httpStatus: r.httpStatus, error: null, at });
      else if (r.outcome === 'retry' && claim.attempt < PUSH_MAX_ATTEMPTS) {
        tx.push.finishAttempt(d.seq, { state: 'pending', nextAttemptAt: at + backoffMs(claim.attempt, r.retryAfterMs, this.ctx.random), httpStatus: r.httpStatus, error: r.error, at });
      } else tx.push.finishAttempt(d.seq, { state: 'failed', nextAttemptAt: null, httpStatus: r.httpStatus, error: r.error, at });
    });
    if (r.outcome === 'accepted') this.ctx.log.info(fields, 'push notification delivered');
    else this.ctx.log.warn(fields, 'push notification not accepted');
  }

  /**
   * The task for a notification: one snapshot of one committed state (attack review 6, F6) — its
   * row and everything its view reads (status message, artifacts) read together in one synchronous
   * turn at render time, as GetTask reads them (src/core/task-view.ts), so no commit of this
   * process falls between them. Rendered a turn after the claim (src/core/push-bodies.ts), it is
   * the task as committed then: when the task moved past the change since, the newer state with
   * its own status and artifacts (A2A v1.0 §4.3.3 StreamResponse `task`: the task's current
   * state), never the change's state with the artifacts of a later one (the claimed row, read a
   * turn before, paired a WORKING status with the reply that completed the task). docs/push.md.
   * @throws Error when the task is gone (pruned): the delivery fails, and its next claim drops it
   */
  private snapshot(agent: AgentConfig, taskId: string): TaskView {
    const task = this.ctx.store.tasks.get(taskId);
    if (!task) throw new Error(`task ${taskId} is gone`);
    return viewTask(this.ctx, agent, task, 0);
  }

  /** Resolves when no delivery is being sent (those due now included: each finished one starts the next). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight.values()].map((f) => f.done));
  }

  /** Stops the timer and waits for the deliveries being sent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#release?.();
    this.#release = null;
    await this.idle();
    await this.#dispatcher?.close();
  }
}

/** The origin of a push URL (scheme, host, port), for the per-origin cap; '' when it cannot be parsed (the delivery then fails on its own). */
function originOf(url: string | undefined): string {
  try {
    return url ? new URL(url).origin : '';
  } catch {
    return '';
  }
}
