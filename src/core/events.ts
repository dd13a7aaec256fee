import type { Logger } from 'pino';
import type { TaskChange } from '../store/task-rows.js';

/**
 * One committed change of a task, announced after its transaction committed (never inside it): the
 * task as the change left it, the state before (null when the change created the task; equal to
 * `task.state` for a note without a move, such as a progress note or a late reply kept), the cause,
 * and when (ms since the epoch). The hook for anything that follows tasks as they change: tests,
 * and streaming (A2A v1.0 §3.1.2 SendStreamingMessage, §3.1.6 SubscribeToTask) or push
 * notifications.
 */
export type TaskChanged = TaskChange;

/** The bridge's task events, in commit order. Listeners run synchronously after the commit; one that throws is logged and the others still run. */
export class BridgeEvents {
  readonly #listeners = new Set<(e: TaskChanged) => void>();

  constructor(private readonly log: Logger) {}

  /** @returns the unsubscribe function */
  on(listener: (e: TaskChanged) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  emit(e: TaskChanged): void {
    for (const l of [...this.#listeners]) {
      try {
        l(e);
      } catch (err) {
        this.log.error({ err: (err as Error).message, task: e.task.id }, 'a task event listener failed');
      }
    }
  }

  /**
   * The first event from now on that `match` accepts. Subscribe before causing the change.
   * @throws the signal's reason when `signal` aborts first
   */
  next(match: (e: TaskChanged) => boolean, signal?: AbortSignal): Promise<TaskChanged> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const stop = this.on((e) => {
        if (!match(e)) return;
        stop();
        signal?.removeEventListener('abort', onAbort);
        resolve(e);
      });
      const onAbort = (): void => {
        stop();
        reject(signal!.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
