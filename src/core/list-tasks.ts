import type { AgentConfig } from '../config/config.js';
import type { Store } from '../store/store.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TaskState } from '../store/task-state.js';
import { BridgeError } from './errors.js';
import type { TaskView } from './task-view.js';

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
 * The rows of one ListTasks page, newest status first. `pageToken` is an opaque keyset cursor (the
 * last task's status time and id) that also carries the total the first page counted, so no later
 * page counts again (store/task-rows.ts, list).
 * @returns the page's rows, and the page without its views (`tasks` empty)
 * @throws BridgeError invalid-request for a token this server did not issue
 */
export function listRows(store: Pick<Store, 'tasks'>, agent: AgentConfig, q: ListQuery): { rows: TaskRow[]; page: ListPage } {
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
  const last = page.at(-1);
  const nextPageToken = rows.length > q.pageSize && last ? Buffer.from(`${last.updatedAt}:${last.id}:${total}`, 'utf8').toString('base64url') : '';
  return { rows: page, page: { tasks: [], nextPageToken, totalSize: total } };
}
