import type { AgentConfig } from '../config/config.js';
import { isTerminal, type TaskState } from '../store/task-state.js';
import type { Bridge } from './bridge.js';
import type { TaskChanged } from './events.js';
import { otherCommitsOf } from './other-commits.js';
import { viewTask, type ArtifactView, type TaskView } from './task-view.js';

/**
 * One update of a followed task, independent of the wire dialect (src/a2a/stream-wire.ts renders
 * it): the task as a whole (always the first), a new artifact, or a status change. `final` marks
 * the update after which the stream ends (a terminal state, or INPUT_REQUIRED: the task waits for
 * the caller).
 */
export type TaskUpdate =
  | { kind: 'task'; task: TaskView; final: boolean }
  | { kind: 'artifact'; task: TaskView; artifact: ArtifactView }
  | { kind: 'status'; task: TaskView; final: boolean };

export { isTerminal };

/** The states after which a stream closes: terminal, or interrupted (A2A v1.0 §3.2.2: INPUT_REQUIRED). */
export function endsStream(state: TaskState): boolean {
  return isTerminal(state) || state === 'INPUT_REQUIRED';
}

/** Updates rendered but not yet read by a slow client at most; past it the stream ends (the client resubscribes and reads the store). */
const MAX_QUEUED_UPDATES = 256;

/**
 * What one committed change shows every stream of its task: the task view read right after the
 * commit, an artifact update for each of its artifacts, and its status update. The update objects
 * are the same for every stream, so what renders them for the wire can keep one rendering per
 * update (src/a2a/methods-stream.ts).
 */
interface ChangeUpdates {
  readonly artifacts: ReadonlyMap<string, TaskUpdate>;
  readonly status: TaskUpdate & { kind: 'status' };
}

/**
 * The updates of each change, by the change (the event object: one per commit, handed to every
 * listener: src/core/events.ts) and the agent whose view it is. Weak: an entry goes with the
 * change once the listeners are done with it.
 */
const changeUpdates = new WeakMap<TaskChanged, Map<string, ChangeUpdates>>();

/**
 * The updates of change `e` as `agent` sees it: the view is built by the first stream of the
 * task that hears the change and shared by the others, so N streams cost one view, not N (a task
 * of a 1 MB message followed by 16 streams stalled the event loop 981 ms: attack review 3,
 * 2026-12-02). Counted in the metric `a2a_mailbridge_stream_renders_total{stage="view"}`.
 */
function updatesOf(bridge: Bridge, agent: AgentConfig, e: TaskChanged): ChangeUpdates {
  let byAgent = changeUpdates.get(e);
  if (!byAgent) changeUpdates.set(e, (byAgent = new Map<string, ChangeUpdates>()));
  const known = byAgent.get(agent.name);
  if (known) return known;
  // The state and its time are the change's; the text and artifacts the store's, read now (right
  // after the commit). No history: a status or artifact update carries none (src/a2a/stream-wire.ts),
  // and building it fenced every earlier reply once per change, so each progress note of a long
  // task cost more than the last (attack review 8: 200 notes of 200 KB with one stream open, 29.5 s
  // of CPU against 8.0 s without, a stall of 577 ms a note at the end).
  const task = viewTask(bridge.ctx, agent, e.task, 0);
  bridge.ctx.metrics?.streamRenders.inc({ stage: 'view' });
  const made: ChangeUpdates = {
    artifacts: new Map(task.artifacts.map((artifact) => [artifact.artifactId, { kind: 'artifact', task, artifact }])),
    status: { kind: 'status', task, final: endsStream(task.state) },
  };
  byAgent.set(agent.name, made);
  return made;
}

export interface FollowOptions {
  /** The first update's task (the caller just built it); read from the store when absent. */
  first?: TaskView;
  /**
   * When the stream may end without a final state: it stays open until this settles and then for
   * `budgetMs` more (SendStreamingMessage: the first webhook attempt, then `server.wait_budget_s`).
   * Absent: it follows the task until a final state (SubscribeToTask).
   */
  hold?: { until: Promise<unknown>; budgetMs: number };
  /** Ends the stream (the client went away). */
  signal?: AbortSignal;
}

/**
 * Follows one task from now on: the task first, then one update per committed change of it
 * (src/core/events.ts) — an artifact update for each artifact the change added, then the status
 * the change left — until a final state. Every update is rendered from the store right after the
 * commit that caused it, so a stream holds no state of its own: a client that drops and
 * subscribes again is shown the task as the store has it (A2A v1.0 §3.1.6). The updates of one
 * change are rendered once and shared by every stream of the task ({@link updatesOf}); the
 * first update (the task) is each stream's own.
 *
 * Subscribes synchronously, before returning: a change committed after this call is never missed.
 * The caller's watch on the mailbox (the watcher on demand) is held while the stream is open. A
 * change another process commits (the CLI's `cancel`, `retry`) is heard within
 * OTHER_COMMIT_POLL_MS (src/core/other-commits.ts), as the task's row then reads.
 *
 * @throws BridgeError task-not-found when `first` is absent and the task is unknown or another agent's
 */
export function followTask(bridge: Bridge, agent: AgentConfig, taskId: string, o: FollowOptions = {}): AsyncIterable<TaskUpdate> {
  const first = o.first ?? bridge.viewOf(agent, taskId);
  let ended = endsStream(first.state);
  const queue: TaskUpdate[] = [{ kind: 'task', task: first, final: ended }];
  const sent = new Set(first.artifacts.map((a) => a.artifactId));
  let wake: (() => void) | null = null;
  const notify = (): void => {
    const w = wake;
    wake = null;
    w?.();
  };
  const end = (): void => {
    ended = true;
    notify();
  };

  /** The task's row as this stream last heard of it: what another process's commit is told by. */
  let known = ended ? undefined : bridge.ctx.store.tasks.get(taskId);
  const onChange = (e: TaskChanged): void => {
    if (ended || e.task.id !== taskId) return;
    known = e.task;
    const { artifacts, status } = updatesOf(bridge, agent, e);
    for (const [id, update] of artifacts) {
      if (sent.has(id)) continue;
      sent.add(id);
      queue.push(update);
    }
    queue.push(status);
    if (status.final) ended = true;
    else if (queue.length > MAX_QUEUED_UPDATES) {
      bridge.ctx.log.warn({ task: taskId, queued: queue.length }, 'a stream fell behind: closed (the client can subscribe again)');
      queue.length = 0;
      ended = true;
    }
    notify();
  };
  const off = ended ? () => undefined : bridge.events.on(onChange);
  const release = ended ? () => undefined : bridge.watchWhile();
  /** Another process committed (src/core/other-commits.ts): the task's row, if it moved, is a change to follow. */
  const onOtherCommit = (shared: Map<string, TaskChanged>): void => {
    if (ended) return;
    const row = bridge.ctx.store.tasks.get(taskId);
    if (!row || (known && row.state === known.state && row.updatedAt === known.updatedAt && row.stateReason === known.stateReason)) return;
    let e = shared.get(taskId);
    if (!e || e.task.updatedAt !== row.updatedAt || e.task.state !== row.state) {
      e = { task: row, previous: known?.state ?? null, cause: row.stateReason ?? 'changed by another process', at: row.updatedAt };
      shared.set(taskId, e);
    }
    known = row;
    onChange(e);
  };
  const offOther = ended ? () => undefined : otherCommitsOf(bridge.ctx.store).on(onOtherCommit);

  let timer: NodeJS.Timeout | undefined;
  if (!ended && o.hold) {
    const { budgetMs } = o.hold;
    const startBudget = (): void => {
      if (!ended) timer = setTimeout(end, budgetMs);
    };
    o.hold.until.then(startBudget, startBudget);
  }
  const onAbort = (): void => end();
  o.signal?.addEventListener('abort', onAbort, { once: true });

  const cleanup = (): void => {
    ended = true;
    off();
    offOther();
    release();
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  };
  if (ended) cleanup();

  return {
    [Symbol.asyncIterator](): AsyncIterator<TaskUpdate> {
      return {
        async next(): Promise<IteratorResult<TaskUpdate>> {
          for (;;) {
            const u = queue.shift();
            if (u) return { value: u, done: false };
            if (ended || o.signal?.aborted) {
              cleanup();
              return { value: undefined, done: true };
            }
            await new Promise<void>((resolve) => (wake = resolve));
          }
        },
        return(): Promise<IteratorResult<TaskUpdate>> {
          queue.length = 0;
          cleanup();
          return Promise.resolve({ value: undefined, done: true });
        },
      };
    },
  };
}
