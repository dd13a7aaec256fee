import { BridgeError } from './errors.js';
import type { AgentConfig } from '../config/config.js';
import type { DispatchState } from '../store/dispatch-state.js';
import type { MailboxState } from '../store/mailbox-state.js';
import type { Schedule } from '../store/schedule.js';
import type { IntegrityResult } from '../store/store.js';
import type { TaskRow } from '../store/task-rows.js';
import { isTerminal, type TaskState } from '../store/task-state.js';
import { cancelTask, sendCancelNotice } from './cancel.js';
import type { BridgeContext } from './context.js';
import { BridgeEvents } from './events.js';
import { attemptDispatch } from './dispatch.js';
import { failpoint } from './failpoints.js';
import { checkMailbox, type CheckSummary } from './mail-check.js';
import { submit, type SendInput } from './submit.js';
import { sweepDeadlines } from './sweep.js';
import { prependStatusNote, viewTask, type TaskView } from './task-view.js';

/** What `GET /health` shows (src/a2a/health.ts renders it); counts are absent for states with none. */
export interface HealthFacts {
  /** The store answered the counts (false: it could not be read). */
  storeOk: boolean;
  tasksByState: Partial<Record<TaskState, number>>;
  dispatchesByState: Partial<Record<DispatchState, number>>;
  mailboxKind: 'imap' | 'maildir';
  /** The last check's outcome; null when the store could not be read. */
  mailbox: MailboxState | null;
  /** The last background integrity check of the store (quick_check); null before the first. */
  storeCheck: StoreCheck | null;
}

/** The outcome of a background quick_check of the store (src/store/integrity.ts). */
export interface StoreCheck extends IntegrityResult {
  /** When it finished, bridge clock (ms). */
  at: number;
  /** How long it took, ms. */
  tookMs: number;
}

/** The answer to a SendMessage: a task, or (a poll word on a context with no task) a plain message. */
export type SendResult = { task: TaskView } | { message: { contextId: string; text: string } };

export interface ListQuery {
  contextId?: string;
  state?: TaskState;
  updatedAfter?: number;
  pageSize: number;
  pageToken?: string;
  historyLength?: number;
  /** false: the tasks come without artifacts (ListTasks' default), and no attachment is read. */
  includeArtifacts?: boolean;
}

/** How often a refresh looks at the store's WAL, in ms (store/wal.ts). */
const STORE_MAINTENANCE_MS = 60_000;

/**
 * The background integrity check of the store (quick_check on a worker thread,
 * src/store/integrity.ts): the first this long after the bridge starts, in ms, so a start is
 * never slowed by reading the whole file…
 */
export const STORE_CHECK_FIRST_MS = 10 * 60_000;
/** …then once a day, in ms. */
export const STORE_CHECK_EVERY_MS = 24 * 3600_000;

/** How often a blocking SendMessage checks the mailbox while it waits, in ms. */
const WAIT_CHECK_EVERY_MS = 2000;

/** Resolves after `ms` (unref'd: it never holds the process open). */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * The use cases (docs/architecture.md, "The data path"): submit, poll, apply replies, sweep
 * deadlines, cancel. In the default request-driven mode every A2A call first runs {@link refresh}:
 * due webhook attempts, at most one mailbox check when one is due (concurrent calls share it), then
 * the deadline sweep — each bounded in time, so every call answers well inside the caller's timeout
 * (docs/architecture.md, "The data path").
 */
export class Bridge {
  private check: Promise<CheckSummary> | null = null;
  private moreWaiting = false;
  private readonly dispatching = new Map<string, Promise<unknown>>();
  private readonly background = new Set<Promise<unknown>>();
  /** When the store's WAL was last looked at (bridge clock, ms); 0 at start, so the first refresh does. */
  private maintainedAt = 0;
  /** When the next background integrity check is due (bridge clock, ms). */
  private storeCheckDueAt: number;
  private storeCheckRunning = false;
  private lastStoreCheck: StoreCheck | null = null;
  /** The store's schedule as of a generation (see {@link schedule}). */
  private scheduled: Schedule & { generation: number } = { generation: -1, nextDispatchAt: null, nextDeadlineAt: null };

  /** Every committed task change, after its commit (src/core/events.ts). */
  readonly events: BridgeEvents;

  constructor(readonly ctx: BridgeContext) {
    this.storeCheckDueAt = ctx.now() + STORE_CHECK_FIRST_MS;
    this.events = new BridgeEvents(ctx.log);
    ctx.store.onTaskChange((c) => {
      // Ids and states only: a cause may quote the mail (its Message-ID), which stays out of the log.
      ctx.log.debug({ task: c.task.id, from: c.previous, to: c.task.state }, 'task changed');
      this.events.emit(c);
    });
  }

  /**
   * SendMessage: the context rules, then the first dispatch attempt (new work) or a refresh (a
   * poll). With `returnImmediately` (v1.0) / `blocking: false` (v0.3) it answers as soon as the
   * task is stored and lets the attempt run on (a2a-python #253: the caller must learn the id).
   */
  async send(
    agent: AgentConfig,
    input: SendInput,
    o: { returnImmediately?: boolean; historyLength?: number } = {},
  ): Promise<SendResult> {
    const outcome = submit(this.ctx, agent, input);
    if (outcome.kind === 'no-task') {
      return {
        message: {
          contextId: outcome.contextId,
          text: `There is no task on context_id ${outcome.contextId} yet. Send the job's text to start one.`,
        },
      };
    }
    if (outcome.kind === 'new' || outcome.kind === 'answer') {
      // Ids and counts only: the ask is the caller's text and stays out of the log.
      this.ctx.log.info({ task: outcome.task.id, agent: agent.name, context: outcome.task.contextId, turn: outcome.task.turn }, outcome.kind === 'new' ? 'task created' : 'caller answered: next turn');
      failpoint('after-task-stored');
      // Answer once the first attempt has an outcome (the webhook timeout bounds it).
      const attempt = this.dispatch(outcome.dispatchId);
      if (!o.returnImmediately) await attempt;
      this.sweep();
    } else if (o.returnImmediately) {
      this.track(this.refresh());
    } else {
      await this.refresh();
    }
    if (!o.returnImmediately) await this.waitWhileAwaitingAgent(outcome.task.id);
    const view = this.view(agent, outcome.task.id, o.historyLength);
    if (outcome.kind === 'poll' && outcome.ignoredText === 'open' && view.status.length > 0) {
      prependStatusNote(
        view,
        `Your message was not sent to ${agent.name}: the task is still with it, and a task takes new input only when it asks for it (input-required). This call was a status check.`,
      );
    }
    if (outcome.kind === 'poll' && outcome.ignoredText === 'unseen-outcome') {
      prependStatusNote(view, `Your message was not sent to ${agent.name}: this task had finished, and this is its result. Send your message again to start a new task.`);
    }
    return { task: view };
  }

  /** GetTask. @throws BridgeError task-not-found for an unknown id or another agent's task. */
  async get(agent: AgentConfig, taskId: string, historyLength?: number): Promise<TaskView> {
    await this.refresh();
    return this.view(agent, taskId, historyLength);
  }

  /**
   * ListTasks, newest status first; `pageToken` is an opaque keyset cursor (the last task's status
   * time and id) that also carries the total the first page counted, so no later page counts again
   * (store/task-rows.ts, list).
   */
  async list(agent: AgentConfig, q: ListQuery): Promise<{ tasks: TaskView[]; nextPageToken: string; totalSize: number }> {
    await this.refresh();
    let before: { updatedAt: number; id: string } | undefined;
    let knownTotal: number | undefined;
    if (q.pageToken) {
      const m = /^(\d+):([0-9a-f-]{36})(?::(\d+))?$/.exec(Buffer.from(q.pageToken, 'base64url').toString('utf8'));
      if (!m) throw new BridgeError('invalid-request', 'pageToken is not a token this server issued');
      before = { updatedAt: Number(m[1]), id: m[2]! };
      if (m[3] !== undefined) knownTotal = Number(m[3]);
    }
    const { rows, total } = this.ctx.store.tasks.list(
      {
        agent: agent.name,
        contextId: q.contextId,
        state: q.state,
        updatedAfter: q.updatedAfter,
        before,
        limit: q.pageSize + 1,
      },
      knownTotal,
    );
    const page = rows.slice(0, q.pageSize);
    const last = page.at(-1);
    const nextPageToken =
      rows.length > q.pageSize && last ? Buffer.from(`${last.updatedAt}:${last.id}:${total}`, 'utf8').toString('base64url') : '';
    for (const t of page) this.shown(t);
    return { tasks: page.map((t) => viewTask(this.ctx, agent, t, q.historyLength, { artifacts: q.includeArtifacts !== false })), nextPageToken, totalSize: total };
  }

  /** CancelTask; the optional cancel notice goes out in the background. @throws BridgeError task-not-found, task-not-cancelable */
  cancel(agent: AgentConfig, taskId: string, historyLength?: number): Promise<TaskView> {
    const { task, changed } = cancelTask(this.ctx, agent, taskId);
    if (changed) this.ctx.log.info({ task: task.id, agent: agent.name }, 'task canceled');
    this.shown(task);
    if (changed && agent.webhook.notifyCancel) this.track(sendCancelNotice(this.ctx, agent, task));
    return Promise.resolve(viewTask(this.ctx, agent, task, historyLength));
  }

  /**
   * The blocking wait: while the task awaits the agent, check the mailbox every {@link
   * WAIT_CHECK_EVERY_MS} until `server.wait_budget_s` is spent. The config guarantees the budget,
   * plus one webhook attempt and one check wait, stays below `server.caller_timeout_s`.
   */
  private async waitWhileAwaitingAgent(taskId: string): Promise<void> {
    const budget = this.ctx.config.server.waitBudgetMs;
    const until = performance.now() + budget;
    while (budget > 0) {
      const state = this.ctx.store.tasks.get(taskId)?.state;
      const left = until - performance.now();
      if ((state !== 'SUBMITTED' && state !== 'WORKING') || left <= 0) return;
      await Promise.race([Promise.allSettled([this.checkNow()]), sleep(left)]);
      this.sweep();
      const now = this.ctx.store.tasks.get(taskId)?.state;
      if (now !== 'SUBMITTED' && now !== 'WORKING') return; // the check just applied a reply
      await sleep(Math.min(WAIT_CHECK_EVERY_MS, Math.max(0, until - performance.now())));
    }
  }

  /**
   * The deadline sweep, never failing the call it runs in: a store that stays locked past the
   * busy timeout (another process holding a write lock) postpones the sweep to the next call.
   */
  private sweep(): void {
    const { nextDeadlineAt } = this.schedule();
    if (nextDeadlineAt === null || nextDeadlineAt >= this.ctx.now()) return;
    try {
      sweepDeadlines(this.ctx);
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'deadline sweep postponed');
    }
  }

  /** Keeps background work (a non-blocking refresh, a cancel notice) until close() waits for it. */
  private track(p: Promise<unknown>): void {
    const q = p.catch((err: unknown) => this.ctx.log.error({ err: (err as Error).message }, 'background work failed')).finally(() => this.background.delete(q));
    this.background.add(q);
  }

  private view(agent: AgentConfig, taskId: string, historyLength?: number): TaskView {
    const task: TaskRow | undefined = this.ctx.store.tasks.get(taskId);
    if (!task || task.agent !== agent.name) throw new BridgeError('task-not-found', `Task ${taskId} not found`);
    this.shown(task);
    return viewTask(this.ctx, agent, task, historyLength);
  }

  /** Records that a caller was shown a terminal task's outcome (see submit's unseen-outcome rule). */
  private shown(task: TaskRow): void {
    if (!isTerminal(task.state) || (task.outcomeShownAt ?? null) !== null) return;
    try {
      this.ctx.store.tx((tx) => tx.tasks.markOutcomeShown(task.id, this.ctx.now()));
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message, task: task.id }, 'could not record that the outcome was shown');
    }
  }

  /**
   * The request-driven step: due dispatches and a due mailbox check run concurrently, each
   * awaited for at most `mailbox.check_wait_ms` (they go on in the background beyond that),
   * then the deadline sweep.
   */
  async refresh(): Promise<void> {
    const budget = this.ctx.config.mailbox.checkWaitMs;
    const now = this.ctx.now();
    const { nextDispatchAt } = this.schedule();
    const work: Promise<unknown>[] =
      nextDispatchAt !== null && nextDispatchAt <= now ? this.ctx.store.turns.dueDispatches(now).map((t) => this.dispatch(t.dispatchId)) : [];
    if (this.checkDue()) work.push(this.checkNow());
    if (work.length) await Promise.race([Promise.allSettled(work), sleep(budget)]);
    this.sweep();
    this.maintainStore();
  }

  /**
   * The store's upkeep, run by every refresh and by `serve`'s timer: at most once a minute (on the
   * bridge clock), truncate a WAL that grew while a reader held a snapshot (store/wal.ts); and
   * when it is due ({@link STORE_CHECK_FIRST_MS}, then every {@link STORE_CHECK_EVERY_MS}), start
   * the integrity check on a worker thread. Never waits and never fails the call it runs in.
   */
  maintainStore(): void {
    const now = this.ctx.now();
    if (now >= this.storeCheckDueAt && !this.storeCheckRunning) this.startStoreCheck(now);
    if (now - this.maintainedAt < STORE_MAINTENANCE_MS) return;
    this.maintainedAt = now;
    try {
      const r = this.ctx.store.shrinkWal();
      if (r.before !== r.after) this.ctx.log.info({ walBytes: r.before, now: r.after }, 'store WAL truncated');
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'store WAL maintenance postponed');
    }
  }

  /** The background quick_check: its outcome is logged (a damaged store at error) and shown by /health. */
  private startStoreCheck(now: number): void {
    this.storeCheckRunning = true;
    this.storeCheckDueAt = now + STORE_CHECK_EVERY_MS;
    const started = performance.now();
    this.track(
      this.ctx.store
        .quickCheckInBackground()
        .then((r) => {
          this.lastStoreCheck = { ...r, at: this.ctx.now(), tookMs: Math.round(performance.now() - started) };
          if (r.ok) this.ctx.log.info({ tookMs: this.lastStoreCheck.tookMs }, 'store integrity check: ok');
          else this.ctx.log.error({ detail: r.detail }, 'store integrity check failed: the store is damaged; restore it from a backup (a2a-mailbridge backup) or move it aside to start empty');
        })
        .finally(() => {
          this.storeCheckRunning = false;
        }),
    );
  }

  /**
   * When the next webhook attempt and the next deadline fall due (store/schedule.ts), read from
   * the store again only after it changed (Store.generation: a commit here or by another
   * process), so a call while nothing can be due asks the store nothing.
   */
  private schedule(): Schedule {
    const generation = this.ctx.store.generation();
    if (generation !== this.scheduled.generation) this.scheduled = { generation, ...this.ctx.store.schedule.next() };
    return this.scheduled;
  }

  /** True when the last check is older than `mailbox.check_interval_s`, or messages are waiting. */
  checkDue(): boolean {
    if (this.moreWaiting) return true;
    const last = this.ctx.store.mailbox.state(this.ctx.mailbox.folder).lastCheckAt;
    return last === null || this.ctx.now() - last >= this.ctx.config.mailbox.checkIntervalMs;
  }

  /** Runs a mailbox check now, or joins the one already running (single flight). */
  checkNow(): Promise<CheckSummary> {
    if (!this.check) {
      this.check = checkMailbox(this.ctx)
        .then((s) => {
          this.moreWaiting = s.more;
          return s;
        })
        .finally(() => {
          this.check = null;
        });
    }
    return this.check;
  }

  /** One attempt of a dispatch, or the attempt already under way for it (single flight per webhook-id). */
  dispatch(dispatchId: string): Promise<unknown> {
    let p = this.dispatching.get(dispatchId);
    if (!p) {
      p = attemptDispatch(this.ctx, dispatchId)
        .catch((err: unknown) => this.ctx.log.error({ err: (err as Error).message, dispatchId }, 'dispatch attempt failed'))
        .finally(() => this.dispatching.delete(dispatchId));
      this.dispatching.set(dispatchId, p);
    }
    return p;
  }

  /** The counts and the last mailbox check, for `GET /health`; never throws. */
  health(): HealthFacts {
    const { store, mailbox } = this.ctx;
    try {
      return {
        storeOk: true,
        tasksByState: store.stats.tasksByState(),
        dispatchesByState: store.stats.dispatchesByState(),
        mailboxKind: mailbox.kind,
        mailbox: store.mailbox.state(mailbox.folder),
        storeCheck: this.lastStoreCheck,
      };
    } catch {
      return { storeOk: false, tasksByState: {}, dispatchesByState: {}, mailboxKind: mailbox.kind, mailbox: null, storeCheck: this.lastStoreCheck };
    }
  }

  /** Starts a refresh in the background (at start-up: resume due dispatches, read mail that came while stopped). */
  resume(): void {
    this.track(this.refresh());
  }

  /** Resolves when the work under way (a mailbox check, webhook attempts, cancel notices) has settled. */
  async idle(): Promise<void> {
    await Promise.allSettled([this.check, ...this.dispatching.values(), ...this.background]);
  }

  /** Waits for the work under way, then closes the mailbox. */
  async close(): Promise<void> {
    await this.idle();
    await this.ctx.mailbox.close();
  }
}
