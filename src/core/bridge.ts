import { BridgeError } from './errors.js';
import type { AgentConfig } from '../config/config.js';
import type { TaskRow } from '../store/task-rows.js';
import { isTerminal, type TaskState } from '../store/task-state.js';
import { healthFacts, type HealthFacts } from './health-facts.js';
import { cancelAndNotify } from './cancel.js';
import type { BridgeContext } from './context.js';
import { BridgeEvents } from './events.js';
import { attemptDispatch } from './dispatch.js';
import { failpoint } from './failpoints.js';
import { PushWorker } from './push.js';
import { checkMailbox, type CheckSummary } from './mail-check.js';
import { noTaskText, withSendNotes } from './send-notes.js';
import { submit, type SendInput } from './submit.js';
import { followTask, type TaskUpdate } from './task-follow.js';
import { sweepDeadlines } from './sweep.js';
import { viewTask, viewWeight, type TaskView } from './task-view.js';
import { StoreUpkeep } from './store-upkeep.js';
import { RefreshDue } from './refresh-due.js';
import { ClockSteps } from './clock-steps.js';
import { VIEW_CACHE_MAX_ENTRIES, ViewCache } from './view-cache.js';
import { listPage, type ListPage, type ListQuery } from './list-tasks.js';
import { monotonicMs } from '../monotonic.js';

export type { ListPage, ListQuery } from './list-tasks.js';
export type { HealthFacts } from './health-facts.js';
export { STORE_CHECK_EVERY_MS, STORE_CHECK_FIRST_MS, type StoreCheck } from './store-upkeep.js';

/** The answer to a SendMessage: a task, or (a poll word on a context with no task) a plain message. */
export type SendResult = { task: TaskView } | { message: { contextId: string; text: string } };

/** States whose status text counts time (src/core/status-text.ts): their views are kept briefly (src/core/view-cache.ts). */
const TIMED_STATES: ReadonlySet<TaskState> = new Set(['SUBMITTED', 'WORKING']);

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
  /** A check queued to start when the running one ends: a change was signalled during it ({@link checkAfterChange}). */
  private followUp: Promise<CheckSummary> | null = null;
  private moreWaiting = false;
  private readonly dispatching = new Map<string, Promise<unknown>>();
  private readonly background = new Set<Promise<unknown>>();
  /** Starts (or joins) the watcher on demand; null when the composition root set none. */
  private watchDemand: (() => () => void) | null = null;
  private readonly upkeep: StoreUpkeep;
  /** When the refresh has work, kept in memory (src/core/refresh-due.ts). */
  private readonly due: RefreshDue;
  /** Moves pending attempt times back when the clock steps back (src/core/clock-steps.ts). */
  private readonly clock: ClockSteps;

  /** Every committed task change, after its commit (src/core/events.ts). */
  readonly events: BridgeEvents;
  /** GetTask views and ListTasks pages while the store and the clock leave them valid, bounded by their weight (src/core/view-cache.ts). */
  readonly views = new ViewCache<TaskView | ListPage>(VIEW_CACHE_MAX_ENTRIES, viewWeight);

  /** Push notification delivery (src/core/push.ts); started by the composition root. */
  readonly push: PushWorker;

  constructor(readonly ctx: BridgeContext) {
    this.upkeep = new StoreUpkeep(ctx, (p) => this.track(p));
    this.events = new BridgeEvents(ctx.log);
    this.clock = new ClockSteps(ctx);
    this.push = new PushWorker(ctx, () => this.watchWhile(), () => this.clock.observe());
    this.due = new RefreshDue(ctx, [this.push, this.upkeep]);
    ctx.store.onTaskChange((c) => {
      // Ids and states only: a cause may quote the mail (its Message-ID), which stays out of the log.
      ctx.log.debug({ task: c.task.id, from: c.previous, to: c.task.state }, 'task changed');
      this.views.clear();
      this.events.emit(c);
      this.push.kick();
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
      return { message: { contextId: outcome.contextId, text: noTaskText(outcome.contextId) } };
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
    return { task: withSendNotes(agent, outcome, this.view(agent, outcome.task.id, o.historyLength)) };
  }

  /**
   * SendStreamingMessage (A2A v1.0 §3.1.2): the context rules as for {@link send}, then the
   * task's updates from its state right after the submit: the stream subscribes before the first
   * webhook attempt starts, so the caller sees SUBMITTED, then the attempt's outcome. Like a
   * blocking send it holds the caller at most until the first attempt has an outcome and then
   * `server.wait_budget_s` (docs/streaming.md); a final state ends it sooner.
   */
  sendStream(agent: AgentConfig, input: SendInput, signal?: AbortSignal): { message: { contextId: string; text: string } } | { updates: AsyncIterable<TaskUpdate> } {
    const outcome = submit(this.ctx, agent, input);
    if (outcome.kind === 'no-task') return { message: { contextId: outcome.contextId, text: noTaskText(outcome.contextId) } };
    const first = withSendNotes(agent, outcome, this.view(agent, outcome.task.id));
    let started!: (attempt: Promise<unknown>) => void;
    const until = new Promise<unknown>((resolve) => (started = resolve));
    const updates = followTask(this, agent, outcome.task.id, { first, hold: { until, budgetMs: this.ctx.config.server.waitBudgetMs }, signal });
    if (outcome.kind === 'new' || outcome.kind === 'answer') {
      this.ctx.log.info({ task: outcome.task.id, agent: agent.name, context: outcome.task.contextId, turn: outcome.task.turn }, outcome.kind === 'new' ? 'task created (stream)' : 'caller answered: next turn (stream)');
      failpoint('after-task-stored');
      started(this.dispatch(outcome.dispatchId));
      this.sweep();
    } else {
      const refreshed = this.refresh();
      this.track(refreshed);
      started(refreshed);
    }
    return { updates };
  }

  /**
   * SubscribeToTask (A2A v1.0 §3.1.6): the task as the store has it, then its updates until a
   * final state. A refresh runs in the background (a reply may be waiting in the mailbox).
   * @throws BridgeError task-not-found
   */
  subscribe(agent: AgentConfig, taskId: string, signal?: AbortSignal): AsyncIterable<TaskUpdate> {
    const updates = followTask(this, agent, taskId, { signal });
    this.track(this.refresh());
    return updates;
  }

  /** The task as a caller sees it, from the view cache (shared: never changed; N streams opened at once share it); records that a terminal outcome was shown. @throws BridgeError task-not-found */
  viewOf(agent: AgentConfig, taskId: string, historyLength?: number): TaskView {
    return this.viewNow(agent, taskId, historyLength);
  }

  /**
   * Lets the composition root run the mailbox watcher on demand (docs/streaming.md): `demand`
   * is called when something needs mail read in the background (an open stream, a push
   * configuration of an open task) and returns the release.
   */
  setWatchDemand(demand: () => () => void): void {
    this.watchDemand = demand;
  }

  /** Holds the watcher on demand until the returned release is called (a no-op without one). */
  watchWhile(): () => void {
    return this.watchDemand ? this.watchDemand() : () => undefined;
  }

  /**
   * GetTask: the view at once while nothing is due ({@link somethingDue}), else a promise of it
   * after the refresh.
   * @throws BridgeError task-not-found for an unknown id or another agent's task (or rejects with it)
   */
  get(agent: AgentConfig, taskId: string, historyLength?: number): TaskView | Promise<TaskView> {
    if (this.somethingDue()) return this.refresh().then(() => this.viewNow(agent, taskId, historyLength));
    return this.viewNow(agent, taskId, historyLength);
  }

  private viewNow(agent: AgentConfig, taskId: string, historyLength?: number): TaskView {
    return this.cached(`get\0${agent.name}\0${taskId}\0${historyLength ?? ''}`, () => {
      const view = this.view(agent, taskId, historyLength);
      return { value: view, timed: TIMED_STATES.has(view.state) };
    }) as TaskView;
  }

  /**
   * ListTasks, newest status first, a page at a time (core/list-tasks.ts: the keyset cursor that
   * also carries the total), from the view cache while it is valid.
   */
  async list(agent: AgentConfig, q: ListQuery): Promise<ListPage> {
    if (this.somethingDue()) await this.refresh();
    return this.cached(`list\0${agent.name}\0${JSON.stringify(q)}`, () => {
      const page = this.listPage(agent, q);
      return { value: page, timed: page.tasks.some((t) => TIMED_STATES.has(t.state)) };
    }) as ListPage;
  }

  /** A view from the cache, else built, kept and returned. A view handed out is shared: never changed. */
  private cached(key: string, build: () => { value: TaskView | ListPage; timed: boolean }): TaskView | ListPage {
    // Read in this order (Store.untimedViewGeneration); not a destructured array, an iterator per call.
    const generation = this.ctx.store.generation();
    const untimed = this.ctx.store.untimedViewGeneration();
    const now = this.ctx.now();
    const hit = this.views.get(key, generation, now, untimed);
    if (hit) return hit;
    const { value, timed } = build();
    this.ctx.metrics?.viewRenders.inc({ stage: 'view' });
    this.views.set(key, generation, value, timed ? now : null, untimed);
    return value;
  }

  private listPage(agent: AgentConfig, q: ListQuery): ListPage {
    const { page, rows } = listPage(this.ctx.store, agent, q, (t) => viewTask(this.ctx, agent, t, q.historyLength, { artifacts: q.includeArtifacts !== false }));
    for (const t of rows) this.shown(t);
    return page;
  }

  /** CancelTask (src/core/cancel.ts cancelAndNotify); the optional cancel notice goes out in the background. @throws BridgeError task-not-found, task-not-cancelable */
  cancel(agent: AgentConfig, taskId: string, historyLength?: number): Promise<TaskView> {
    const { task, notice } = cancelAndNotify(this.ctx, agent, taskId);
    this.shown(task);
    if (notice) this.track(notice);
    return Promise.resolve(viewTask(this.ctx, agent, task, historyLength));
  }

  /**
   * The blocking wait: while the task awaits the agent, check the mailbox every {@link
   * WAIT_CHECK_EVERY_MS} until `server.wait_budget_s` is spent. The config guarantees the budget,
   * plus one webhook attempt and one check wait, stays below `server.caller_timeout_s`.
   */
  private async waitWhileAwaitingAgent(taskId: string): Promise<void> {
    const budget = this.ctx.config.server.waitBudgetMs;
    const until = monotonicMs() + budget;
    while (budget > 0) {
      const state = this.ctx.store.tasks.get(taskId)?.state;
      const left = until - monotonicMs();
      if ((state !== 'SUBMITTED' && state !== 'WORKING') || left <= 0) return;
      await Promise.race([Promise.allSettled([this.checkNow()]), sleep(left)]);
      this.sweep();
      const now = this.ctx.store.tasks.get(taskId)?.state;
      if (now !== 'SUBMITTED' && now !== 'WORKING') return; // the check just applied a reply
      await sleep(Math.min(WAIT_CHECK_EVERY_MS, Math.max(0, until - monotonicMs())));
    }
  }

  /**
   * The deadline sweep, never failing the call it runs in: a store that stays locked past the
   * busy timeout (another process holding a write lock) postpones the sweep to the next call.
   */
  private sweep(): void {
    const { nextDeadlineAt } = this.due.schedule();
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
    this.clock.observe();
    const now = this.ctx.now();
    const { nextDispatchAt } = this.due.schedule();
    const work: Promise<unknown>[] =
      nextDispatchAt !== null && nextDispatchAt <= now ? this.ctx.store.turns.dueDispatches(now).map((t) => this.dispatch(t.dispatchId)) : [];
    if (this.checkDue()) work.push(this.checkNow());
    if (work.length) await Promise.race([Promise.allSettled(work), sleep(budget)]);
    this.sweep();
    this.push.refresh();
    const upkeep = this.maintainStore();
    this.due.settle();
    await upkeep;
  }

  /**
   * Whether a read (GetTask, ListTasks) must run {@link refresh} first: the store changed or the
   * clock reached what was due first at the end of the last refresh (src/core/refresh-due.ts), or
   * messages are waiting in the mailbox. Else a refresh would find nothing to do, and the read
   * asks nothing of the store, the push worker or the upkeep.
   */
  private somethingDue(): boolean {
    return this.moreWaiting || this.due.somethingDue();
  }

  /** True when the last check is older than `mailbox.check_interval_s`, or messages are waiting. */
  checkDue(): boolean {
    return this.moreWaiting || this.due.checkDue();
  }

  /**
   * A check that starts after this call, for a signal that the folder changed (the watcher): none
   * running, one now; one running — it may have listed the folder before the new mail landed —
   * one more right after it. Every signal during the same check shares that one (coalesced).
   */
  checkAfterChange(): Promise<CheckSummary> {
    const running = this.check;
    if (!running) return this.checkNow();
    const next = (): Promise<CheckSummary> => {
      this.followUp = null;
      return this.checkNow();
    };
    this.followUp ??= running.then(next, next);
    return this.followUp;
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
      this.clock.observe();
      p = attemptDispatch(this.ctx, dispatchId)
        .catch((err: unknown) => this.ctx.log.error({ err: (err as Error).message, dispatchId }, 'dispatch attempt failed'))
        .finally(() => this.dispatching.delete(dispatchId));
      this.dispatching.set(dispatchId, p);
    }
    return p;
  }

  /** The store's upkeep (src/core/store-upkeep.ts), run by every refresh and by `serve`'s timer; never waits or fails the call. */
  maintainStore(): Promise<void> {
    return this.upkeep.run();
  }

  /** The counts and the last mailbox check, for `GET /health`; never throws. */
  health(): HealthFacts {
    return healthFacts(this.ctx, this.upkeep.lastCheck);
  }

  /** Starts a refresh in the background (at start-up: resume due dispatches, read mail that came while stopped). */
  resume(): void {
    this.track(this.refresh());
  }

  /**
   * Resolves when the work under way (a mailbox check and the one queued after it, webhook
   * attempts, cancel notices) has settled.
   */
  async idle(): Promise<void> {
    await Promise.allSettled([this.check, this.followUp, ...this.dispatching.values(), ...this.background, this.push.idle()]);
  }

  /** Waits for the work under way, then closes the mailbox. */
  async close(): Promise<void> {
    await this.idle();
    await this.push.close();
    await this.ctx.mailbox.close();
  }
}
