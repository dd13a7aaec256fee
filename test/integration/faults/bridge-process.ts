/**
 * The bridge as a child process, the way a service manager runs it: `node --import tsx
 * src/cli/main.ts --config <file> serve`, with an optional failpoint (src/core/failpoints.ts) that
 * makes it SIGKILL itself. Its JSON log lines (stderr) are kept, and can be awaited as events:
 * `start` resolves on the "a2a-mailbridge listening" line, a test on a "task changed" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Store } from '../../../src/store/store.js';
import type { FailpointName } from '../../../src/core/failpoints.js';
import type { StartPoint } from '../../../src/cli/serve-signals.js';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

export interface BridgeProcess {
  child: ChildProcess;
  /** Every stderr line so far (JSON log lines, or a plain error line). */
  lines: string[];
  /**
   * The first stderr line (so far or to come) that `match` accepts.
   * @throws Error with the process's stderr when it exits first
   */
  line(match: (line: string) => boolean): Promise<string>;
  /** The first JSON log line with this `msg` (so far or to come) that `match` accepts. */
  log(msg: string, match?: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Resolves when the process has exited, with its code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then wait for the exit (SIGKILL after 10 s); a no-op once it exited. */
  stop(): Promise<void>;
}

/** Every bridge process started and not yet seen to exit: killed by `killAll` (afterAll/afterEach). */
const running = new Set<BridgeProcess>();

/**
 * Runs `serve` with `args` before it (e.g. `--config file`), with `failpoint` armed when given and
 * `startPause` set as A2A_MAILBRIDGE_START_PAUSE (src/cli/serve-signals.ts) when given.
 */
export function spawnCli(args: string[], failpoint?: FailpointName, startPause?: StartPoint): BridgeProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.A2A_MAILBRIDGE_FAILPOINT;
  delete env.A2A_MAILBRIDGE_START_PAUSE;
  if (startPause) env.A2A_MAILBRIDGE_START_PAUSE = startPause;
  delete env.JOURNAL_STREAM; // log to stderr, whatever runs the tests
  delete env.INVOCATION_ID;
  if (failpoint) env.A2A_MAILBRIDGE_FAILPOINT = failpoint;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const lines: string[] = [];
  const seen = new EventEmitter();
  let partial = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    partial += d;
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    for (const l of parts) seen.emit('line', l);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      if (partial) lines.push(partial);
      running.delete(p);
      resolve({ code, signal });
      seen.emit('exit');
    });
  });
  const line = (match: (l: string) => boolean): Promise<string> =>
    new Promise((resolve, reject) => {
      const hit = lines.find(match);
      if (hit !== undefined) return resolve(hit);
      const onLine = (l: string): void => {
        if (!match(l)) return;
        done();
        resolve(l);
      };
      const onExit = (): void => {
        done();
        reject(new Error(`the bridge exited (${child.exitCode ?? child.signalCode}) first:\n${lines.join('\n')}`));
      };
      const done = (): void => {
        seen.off('line', onLine);
        seen.off('exit', onExit);
      };
      if (child.exitCode !== null || child.signalCode !== null) return onExit();
      seen.on('line', onLine);
      seen.on('exit', onExit);
    });
  const parse = (l: string): Record<string, unknown> | null => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      return null;
    }
  };
  const p: BridgeProcess = {
    child,
    lines,
    line,
    log: async (msg, match = () => true) => parse(await line((l) => { const o = parse(l); return o !== null && o.msg === msg && match(o); }))!,
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
 * Starts `serve` at log level debug (so every task change is logged: "task changed") and waits
 * for its "listening" log line.
 * @throws Error with the process's stderr when it exits first
 */
export async function startBridgeProcess(configPath: string, failpoint?: FailpointName): Promise<BridgeProcess> {
  const p = spawnCli(['--config', configPath, 'serve', '--log-level', 'debug'], failpoint);
  await p.log('a2a-mailbridge listening');
  return p;
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
export function readStore<T>(path: string, fn: (db: Store) => T): T {
  const db = Store.open(path, { readOnly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** `PRAGMA quick_check` on the store file, read-only: `ok` when the file is sound. */
export function quickCheck(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return String(db.pragma('quick_check', { simple: true }));
  } finally {
    db.close();
  }
}
