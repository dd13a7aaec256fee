import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/config.js';
import { listPage, type ListQuery } from '../../../src/core/list-tasks.js';
import { viewWeight, type TaskView } from '../../../src/core/task-view.js';
import type { TaskRow } from '../../../src/store/task-rows.js';
import { buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const store = buildStore(':memory:', NOW);
const grok = { name: 'grok' } as AgentConfig;

/** A view of `row` whose status text is `chars` long: an agent's reply of that size. */
const viewOf = (chars: number) => (row: TaskRow): TaskView => ({
  id: row.id, contextId: row.contextId, agent: row.agent, state: row.state, statusAt: row.updatedAt, turn: row.turn, createdAt: row.createdAt, deadlineAt: row.deadlineAt,
  status: [{ kind: 'text', text: 'y'.repeat(chars), meta: null }], artifacts: [], history: [],
});

/** Every page from the first, following nextPageToken. */
function allPages(q: ListQuery, chars: number, maxWeight: number): { ids: string[][]; rows: string[][] } {
  const ids: string[][] = [];
  const rows: string[][] = [];
  let token: string | undefined;
  do {
    const r = listPage(store, grok, { ...q, ...(token ? { pageToken: token } : {}) }, viewOf(chars), maxWeight);
    ids.push(r.page.tasks.map((t) => t.id));
    rows.push(r.rows.map((t) => t.id));
    token = r.page.nextPageToken || undefined;
  } while (token && ids.length < 10);
  return { ids, rows };
}

describe('ListTasks pages bounded by weight', () => {
  const whole = listPage(store, grok, { pageSize: 50 }, viewOf(1000)).page.tasks.map((t) => t.id);

  it('holds every task when they fit, with no next page', () => {
    expect(whole).toHaveLength(4);
    expect(listPage(store, grok, { pageSize: 50 }, viewOf(1000)).page.nextPageToken).toBe('');
  });

  it('stops at the task that would pass the weight, and the next page goes on from there', () => {
    const one = viewWeight(viewOf(1000)(store.tasks.get(whole[0]!)!));
    const { ids, rows } = allPages({ pageSize: 50 }, 1000, 2 * one + 1);
    expect(ids).toEqual([whole.slice(0, 2), whole.slice(2, 4)]);
    // Only the tasks a page holds count as shown to the caller.
    expect(rows).toEqual(ids);
  });

  it('always holds one task, however heavy, so paging never stalls', () => {
    const { ids } = allPages({ pageSize: 50 }, 10_000, 100);
    expect(ids).toEqual(whole.map((id) => [id]));
  });

  it('keeps pageSize and the total', () => {
    const r = listPage(store, grok, { pageSize: 3 }, viewOf(10), 1_000_000).page;
    expect(r.tasks).toHaveLength(3);
    expect(r.totalSize).toBe(4);
    expect(r.nextPageToken).not.toBe('');
  });
});
