import type { AgentConfig } from '../config/config.js';
import type { Store } from '../store/store.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TaskState } from '../store/task-state.js';
import { BridgeError } from './errors.js';
import { viewWeight, type TaskView } from './task-view.js';

/**
 * How much one ListTasks page may carry, in {@link viewWeight} units (about characters of its texts
 * and bytes of its files): 4 Mi. A page stops at the task that would take it past this, and its
 * `nextPageToken` goes on from there — A2A lets a page hold fewer tasks than `pageSize` (v1.0
 * §3.1.4: "the service may return fewer"). Its first task always comes, so paging never stalls;
 * one task's view is bounded by `mailbox.max_message_bytes` per reply. Without it, 50 tasks each
 * holding an agent's 9 MB reply made one call answer 108 MB and stall every other caller for 3 s.
 */
export const LIST_PAGE_MAX_WEIGHT = 4 * 1024 * 1024;

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

/** A page of ListTasks. */
export interface ListPage {
  tasks: TaskView[];
  nextPageToken: string;
  totalSize: number;
}

/**
 * One ListTasks page, newest status first: its rows (listRows), each made a view by `view` in
 * order until the page's weight would pass `maxWeight` ({@link LIST_PAGE_MAX_WEIGHT}; the first
 * always comes). A page cut short gets the token of its last task.
 * @returns the page, and the rows of the tasks it holds
 * @throws BridgeError invalid-request for a token this server did not issue
 */
export function listPage(store: Pick<Store, 'tasks'>, agent: AgentConfig, q: ListQuery, view: (row: TaskRow) => TaskView, maxWeight = LIST_PAGE_MAX_WEIGHT): { page: ListPage; rows: TaskRow[] } {
  const { rows, page, tokenAfter } = listRows(store, agent, q);
  const tasks: TaskView[] = [];
  let weight = 0;
  for (const row of rows) {
    const v = view(row);
    weight += viewWeight(v);
    if (tasks.length > 0 && weight > maxWeight) return { page: { ...page, tasks, nextPageToken: tokenAfter(tasks.length - 1) }, rows: rows.slice(0, tasks.length) };
    tasks.push(v);
  }
  return { page: { ...page, tasks }, rows };
}

/**
 * The rows of one ListTasks page, newest status first. `pageToken` is an opaque keyset cursor (the
 * last task's status time and id) that also carries the total the first page counted, so no later
 * page counts again (store/task-rows.ts, list).
 * @returns the page's rows, the page without its views (`tasks` empty), and the token of a page
 *   that ends after its row `i`
 * @throws BridgeError invalid-request for a token this server did not issue
 */
function listRows(store: Pick<Store, 'tasks'>, agent: AgentConfig, q: ListQuery): { rows: TaskRow[]; page: ListPage; tokenAfter: (i: number) => string } {
  let before: { updatedAt: number; id: string } | undefined;
  let knownTotal: number | undefined;
  if (q.pageToken) {
    const m = /^(\d+):([0-9a-f-]{36})(?::(\d+))?$/.exec(Buffer.from(q.pageToken, 'base64url').toString('utf8'));
    if (!m) throw new BridgeError('invalid-request', 'pageToken is not a token this server issued');
    before = { updatedAt: Number(m[1]), id: m[2]! };
    if (m[3] !== undefined) knownTotal = Number(m[3]);
  }
  const { rows, total } = store.tasks.list(
    { agent: agent.name, contextId: q.contextId, state: q.state, updatedAfter: q.updatedAfter, before, limit: q.pageSize + 1 },
    knownTotal,
  );
  const page = rows.slice(0, q.pageSize);
  const tokenAfter = (i: number): string => Buffer.from(`${page[i]!.updatedAt}:${page[i]!.id}:${total}`, 'utf8').toString('base64url');
  const nextPageToken = rows.length > q.pageSize && page.length > 0 ? tokenAfter(page.length - 1) : '';
  return { rows: page, page: { tasks: [], nextPageToken, totalSize: total }, tokenAfter };
}
