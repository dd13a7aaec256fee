/**
 * Failpoints for crash tests: when the environment variable
 * `A2A_MAILBRIDGE_FAILPOINT` names a point, the process kills itself with SIGKILL on reaching
 * it — no cleanup, no flush, exactly like a power cut. Unset (always, outside the kill tests),
 * a failpoint is one string comparison.
 *
 * Points:
 * - `after-task-stored`: the task and its turn are committed; the webhook was not sent.
 * - `after-webhook-2xx`: the receiver answered 2xx; the attempt and the state change are not recorded.
 * - `while-applying-reply`: inside the transaction that records and applies an authenticated reply.
 */
export type FailpointName = 'after-task-stored' | 'after-webhook-2xx' | 'while-applying-reply';

const armed = process.env.A2A_MAILBRIDGE_FAILPOINT;

export function failpoint(name: FailpointName): void {
  if (armed === name) process.kill(process.pid, 'SIGKILL');
}
