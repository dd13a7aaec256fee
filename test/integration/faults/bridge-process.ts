/**
 * The bridge as a child process, the way a service manager runs it: `node --import tsx
 * src/cli/main.ts --config <file> serve`, with an optional failpoint (src/core/failpoints.ts) that
 * makes it SIGKILL itself. Its JSON log lines (stderr) are kept; `start` resolves on the
 * "a2a-mailbridge listening" line rather than after a sleep.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { FailpointName } from '../../../src/core/failpoints.js';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

export interface BridgeProcess {
  child: ChildProcess;
  /** Every stderr line so far (JSON log lines, or a plain error line). */
  lines: string[];
  /** Resolves when the process has exited, with its code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then wait for the exit (SIGKILL after 10 s); a no-op once it exited. */
  stop(): Promise<void>;
}

/** Every bridge process started and not yet seen to exit: killed by `killAll` (afterAll/afterEach). */
const running = new Set<BridgeProcess>();

/** Runs `serve` with `args` before it (e.g. `--config file`), with `failpoint` armed when given. */
export function spawnCli(args: string[], failpoint?: FailpointName): BridgeProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.A2A_MAILBRIDGE_FAILPOINT;
  delete env.JOURNAL_STREAM; // log to stderr, whatever runs the tests
  delete env.INVOCATION_ID;
  if (failpoint) env.A2A_MAILBRIDGE_FAILPOINT = failpoint;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    partial += d;
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      if (partial) lines.push(partial);
      running.delete(p);
      resolve({ code, signal });
    });
  });
  const p: BridgeProcess = {
    child,
    lines,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
  running.add(p);
  return p;
}

/**
 * Starts `serve` and waits for its "listening" log line.
 * @throws Error with the process's stderr when it exits first or does not listen within `timeoutMs`
 */
export async function startBridgeProcess(configPath: string, failpoint?: FailpointName, timeoutMs = 30_000): Promise<BridgeProcess> {
  const p = spawnCli(['--config', configPath, 'serve'], failpoint);
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (p.lines.some((l) => l.includes('"a2a-mailbridge listening"'))) return p;
    if (p.child.exitCode !== null || p.child.signalCode !== null) {
      throw new Error(`the bridge exited before listening (${p.child.exitCode ?? p.child.signalCode}):\n${p.lines.join('\n')}`);
    }
    if (Date.now() > until) {
      await p.stop();
      throw new Error(`the bridge did not log "listening" within ${timeoutMs} ms:\n${p.lines.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Kills every bridge process still running (test clean-up). */
export async function killAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

/** Parsed JSON log lines with this `msg`. */
export function logged(p: BridgeProcess, msg: string): Record<string, unknown>[] {
  return p.lines.flatMap((l) => {
    try {
      const o = JSON.parse(l) as Record<string, unknown>;
      return o.msg === msg ? [o] : [];
    } catch {
      return [];
    }
  });
}

/** Opens the store read-only (as the CLI's read commands do), runs `fn`, closes it. */
export function readStore<T>(path: string, fn: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** `PRAGMA quick_check` on the store file, read-only: `ok` when the file is sound. */
export function quickCheck(path: string): string {
  return readStore(path, (db) => String(db.pragma('quick_check', { simple: true })));
}
