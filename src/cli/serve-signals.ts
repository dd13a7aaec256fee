/**
 * The stop signals of `serve` (SIGINT: Ctrl-C; SIGTERM: `stop`, a service manager), held from the
 * moment the command line names `serve` (src/cli/main.ts), before its config is read. Without a
 * listener Node ends the process by the signal itself (no log line, exit by signal); the start of
 * `serve` — the listen probe, the claim, the log — took about 0.3 s during which Ctrl-C did that
 * (fresh-user trial), while the README promises a clean stop. A signal is only recorded until
 * `serve` hands its handler over ({@link StopSignals.take}); serve asks {@link StopSignals.signal}
 * after each step of its start and ends there, having opened nothing more.
 */
export interface StopSignals {
  /** The first signal received so far, or undefined. */
  readonly signal: string | undefined;
  /**
   * The first signal received, or undefined, after one turn of the event loop: a signal that
   * came while JavaScript ran (loading modules, reading the config) reaches its listener only in
   * the loop's poll phase, which a chain of promises may not pass through.
   */
  received(): Promise<string | undefined>;
  /** Resolves with the first signal's name when it comes. */
  readonly asked: Promise<string>;
  /** From now on every signal goes to `handler` (one that came before is not replayed: see `signal`). */
  take(handler: (signal: string) => void): void;
}

/** The signals `serve` stops on. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Where the signals held in this process are kept, once {@link holdStopSignals} was called: on
 * `globalThis`, as the process entry (src/cli/entry.ts, dist/cli/main.js) and the CLI's bundle it
 * runs each hold a copy of this module, and both must find the one set of listeners.
 */
const HELD = Symbol.for('a2a-mailbridge.stop-signals');

/**
 * Installs the listeners of SIGINT and SIGTERM (they do not keep the process alive) and returns
 * what they record; a second call returns the same. For `serve` only: other commands keep Node's
 * default (a signal ends them).
 */
export function holdStopSignals(): StopSignals {
  const slot = globalThis as { [HELD]?: StopSignals };
  slot[HELD] ??= listen();
  return slot[HELD];
}

/**
 * Whether the command line `args` (process.argv after the script) runs `serve`: its first word that
 * is neither an option nor the value of `-c`/`--config` (src/cli/main.ts's only global option
 * with a value) is `serve`. Read before commander parses it, so that the signals are held while
 * the CLI's modules load; a form this misses is held all the same when the command runs.
 */
export function namesServe(args: readonly string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return args[i + 1] === 'serve';
    if (a === '-c' || a === '--config') i++;
    else if (!a.startsWith('-')) return a === 'serve';
  }
  return false;
}

function listen(): StopSignals {
  let first: string | undefined;
  let handler: ((signal: string) => void) | undefined;
  let resolveAsked!: (signal: string) => void;
  const asked = new Promise<string>((resolve) => (resolveAsked = resolve));
  for (const name of STOP_SIGNALS) {
    process.on(name, () => {
      if (first === undefined) {
        first = name;
        resolveAsked(name);
      }
      handler?.(name);
    });
  }
  return {
    get signal() {
      return first;
    },
    asked,
    async received() {
      // setImmediate runs after the poll phase, where libuv hands a pending signal to its listener.
      await new Promise((resolve) => setImmediate(resolve));
      return first;
    },
    take(h) {
      handler = h;
    },
  };
}

/** Where `serve`'s start can be held for a test ({@link startPause}). */
export type StartPoint = 'config-read' | 'claimed';

/**
 * Test seam of `serve`'s start, like src/core/failpoints.ts: when `A2A_MAILBRIDGE_START_PAUSE`
 * names `point`, writes `a2a-mailbridge start paused at <point>` on stderr and waits there until a
 * stop signal comes, so a test can send a real signal at that step without a sleep. Unset (always,
 * outside those tests) it returns at once.
 * - `config-read`: the config is read; nothing is made yet.
 * - `claimed`: the store's folder and the claim exist; the log and the store are not opened.
 */
export async function startPause(point: StartPoint, signals: StopSignals): Promise<void> {
  if (process.env.A2A_MAILBRIDGE_START_PAUSE !== point) return;
  process.stderr.write(`a2a-mailbridge start paused at ${point}\n`);
  // A pending promise does not keep the process alive, nor do signal listeners: a timer does.
  const alive = setInterval(() => {}, 60_000);
  await signals.asked;
  clearInterval(alive);
}
