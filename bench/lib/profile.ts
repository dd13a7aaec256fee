/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and sums sample time per function (self time: the
 * time on the top of the stack; SQLite's C code counts towards the JS function that called the
 * statement) and per kind of work, for the benchmark notes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  what: string;
  share: number;
}

/** The newest `.cpuprofile` in `dir`. */
export function newestProfile(dir: string): string {
  const f = readdirSync(dir).filter((x) => x.endsWith('.cpuprofile')).sort().at(-1);
  if (!f) throw new Error(`no .cpuprofile in ${dir}`);
  return join(dir, f);
}

function frameName(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url.replace(/^.*\/(node_modules\/[^/]+|dist)\//, '$1/').replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
}

/**
 * Self time per function, the largest first, as shares of the samples taken while the process
 * was not idle; and the share of the samples inside functions whose frame matches each `groups`
 * pattern anywhere on the stack (inclusive).
 */
export function summariseProfile(file: string, top: number, groups: Record<string, RegExp>): { self: ProfileLine[]; groups: ProfileLine[]; busyMs: number } {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const timeOf = new Map<number, number>();
  p.samples.forEach((id, i) => timeOf.set(id, (timeOf.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  let busy = 0;
  const self = new Map<string, number>();
  const inGroup = new Map<string, number>();
  for (const [id, t] of timeOf) {
    const node = byId.get(id)!;
    const name = frameName(node);
    if (name.startsWith('(idle)') || name.startsWith('(program)')) continue;
    busy += t;
    self.set(name, (self.get(name) ?? 0) + t);
    const stack: string[] = [];
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) stack.push(frameName(byId.get(x)!));
    for (const [g, re] of Object.entries(groups)) if (stack.some((f) => re.test(f))) inGroup.set(g, (inGroup.get(g) ?? 0) + t);
  }
  const lines = (m: Map<string, number>): ProfileLine[] => [...m].sort((a, b) => b[1] - a[1]).map(([what, t]) => ({ what, share: t / busy }));
  return { self: lines(self).slice(0, top), groups: Object.keys(groups).map((g) => ({ what: g, share: (inGroup.get(g) ?? 0) / busy })), busyMs: busy / 1000 };
}
