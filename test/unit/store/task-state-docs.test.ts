import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assertTransition, canTransition, TASK_STATES, type TaskState } from '../../../src/store/task-state.js';

/** The moves a reader is shown, against the table the code obeys (src/store/task-state.ts). */
const tableMoves = (): string[] => {
  const out: string[] = [];
  for (const from of TASK_STATES) {
    for (const to of TASK_STATES) {
      let guarded = false;
      try {
        assertTransition({ id: 't', state: from, failedBy: 'dispatch' }, to, 'operator-retry');
        guarded = true;
      } catch {
        /* not a guarded edge */
      }
      if (canTransition(from, to) || guarded) out.push(`${from} → ${to}`);
    }
  }
  return out.sort();
};

describe('the task state machine as the docs draw it', () => {
  it("README's state diagram has exactly the table's moves", () => {
    const readme = readFileSync('README.md', 'utf8');
    const diagram = /```mermaid\nstateDiagram-v2\n([\s\S]*?)```/.exec(readme)![1]!;
    const drawn = [...diagram.matchAll(/^\s*([A-Z_]+) --> ([A-Z_]+)/gm)].map((m) => `${m[1] as TaskState} → ${m[2] as TaskState}`);
    expect(drawn.sort()).toEqual(tableMoves());
  });

  it("docs/architecture.md's table has exactly the table's moves", () => {
    const doc = readFileSync('docs/architecture.md', 'utf8');
    const section = doc.slice(doc.indexOf('## The task state machine'), doc.indexOf('## The dispatch state machine'));
    const moves: string[] = [];
    for (const m of section.matchAll(/^\| ([A-Z_, ]+?)(?: \([^)]*\))? \| (.+) \|$/gm)) {
      const froms = m[1]!.split(', ');
      const tos = m[2]!.startsWith('SUBMITTED only by the named edge') ? ['SUBMITTED'] : m[2] === '—' ? [] : m[2]!.split(', ');
      for (const f of froms) for (const t of tos) moves.push(`${f} → ${t}`);
    }
    expect(moves.sort()).toEqual(tableMoves());
  });
});
