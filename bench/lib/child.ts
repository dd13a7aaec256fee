import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Child processes for the benchmarks: each server and the load generator runs in a Node process of
 * its own (its own event loop and, on a 2-core machine, its own core), started from a TypeScript
 * file through tsx's loader, and talked to over the IPC channel with small request/answer messages.
 */

const HERE = dirname(fileURLToPath(import.meta.url));

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** The first message the child sent (`{ type: 'ready', ... }`). */
  ready: Record<string, unknown>;
  /** Sends `{ id, ...msg }` and resolves with the child's answer `{ id, ... }`. */
  call<T = Record<string, unknown>>(msg: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** SIGTERM, then SIGKILL after 3 s; resolves when the process is gone. Idempotent. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const c of live) c.kill('SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      for (const c of live) c.kill('SIGKILL');
      process.exit(130);
    });
  }
}

/**
 * Starts `bench/lib/<file>` under tsx and waits for its ready message.
 * @param execArgv extra Node flags (e.g. `--cpu-prof`)
 */
export async function startChild(file: string, o: { args?: string[]; env?: Record<string, string>; execArgv?: string[]; readyTimeoutMs?: number } = {}): Promise<Child> {
  hookExit();
  const proc = fork(resolve(HERE, file), o.args ?? [], {
    execArgv: ['--import', 'tsx', ...(o.execArgv ?? [])],
    env: { ...process.env, ...(o.env ?? {}) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(proc);
  const pending = new Map<number, (m: Record<string, unknown>) => void>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not become ready`)), o.readyTimeoutMs ?? 60_000);
    proc.once('exit', (code, signal) => reject(new Error(`${file} exited before ready (${code ?? signal})`)));
    proc.on('message', (raw) => {
      const m = raw as Record<string, unknown>;
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolve(m);
      } else if (typeof m.id === 'number') {
        pending.get(m.id)?.(m);
        pending.delete(m.id);
      }
    });
  });
  let stopped = false;
  return {
    proc,
    pid: proc.pid!,
    ready,
    call: <T>(msg: Record<string, unknown>, timeoutMs = 600_000) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => reject(new Error(`${file}: no answer to ${String(msg.type)}`)), timeoutMs);
        pending.set(id, (m) => {
          clearTimeout(timer);
          if (typeof m.error === 'string') reject(new Error(`${file}: ${m.error}`));
          else resolve(m as T);
        });
        proc.send({ ...msg, id });
      }),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
      }
      live.delete(proc);
    },
  };
}

/**
 * In a child: answers the parent's requests with `handler` and says ready with `info`.
 * SIGTERM runs `onStop` and exits.
 */
export function serveParent(info: Record<string, unknown>, handler: (m: Record<string, unknown>) => Promise<Record<string, unknown>>, onStop: () => Promise<void> = async () => {}): void {
  process.on('message', (raw) => {
    const m = raw as Record<string, unknown>;
    handler(m).then(
      (answer) => process.send?.({ ...answer, id: m.id }),
      (err: unknown) => process.send?.({ id: m.id, error: (err as Error).stack ?? String(err) }),
    );
  });
  const stop = (): void => {
    void onStop().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
  process.send?.({ type: 'ready', ...info });
}

/** Resident set size and its peak, in bytes, of a process (Linux /proc). */
/** CPU time the process `pid` has used so far, user and system, all its threads, in ms (Linux: /proc/<pid>/stat, in clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function rssOf(pid: number): { rss: number; peak: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  // RssAnon: the process's own pages (V8's heap, malloc); RssFile: pages of mapped files (the node
  // binary's code and data, the SQLite addon, libc), which every process mapping them shares.
  return { rss: kb('VmRSS'), peak: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}
