/**
 * Runs the public A2A conformance kit's (a2aproject/a2a-tck) v0.3 mandatory suite against a running
 * a2a-mailbridge, with Debian's Python (`/usr/bin/python3` and the packages
 * `scripts/install-tck-deps.sh` installs), and writes the summary to
 * `scripts/conformance-tck.last.md`.
 *
 *   npx tsx scripts/conformance-tck.ts --tck /tmp/a2a-tck [--tck-rev eb1f804] [--mode both|as-is|adapted]
 *
 * The kit is referenced by path only; nothing of it is copied here. Use the last commit that still
 * has the v0.3 mandatory suite (`tests/mandatory/`, `run_tck.py --category mandatory`): the tip of
 * the kit's `0.3.x` branch (tag `0.3.0.beta4`, eb1f804); on `main` the suite moved to v1.0 RC with
 * d36f441, so b03fefc is main's last v0.3 commit. A work tree outside this repo, e.g.
 *   git --git-dir=<mirror of a2aproject/a2a-tck> archive eb1f804 | tar -x -C /tmp/a2a-tck
 *
 * For each mode it starts, like `a2a-mailbridge demo` (src/demo/round-trip.ts): a temporary config
 * folder with 0600 secret files, a DNS zone serving the agent's DKIM key, the simulated cloud agent
 * (verifies the webhook, mails a DKIM-signed reply into a Maildir after --reply-delay-ms), and the
 * bridge with `mailbox.watch = true` (fs.watch applies each reply as it lands, so a task completes
 * about --reply-delay-ms after it was sent, with no poll needed). It prints the bridge URL and
 * bearer, runs `run_tck.py --category mandatory --transports jsonrpc`, reads the per-test outcome
 * from a JUnit XML file (pytest's own `--junitxml`, given through PYTEST_ADDOPTS), and stops
 * everything (the kit's process group, the bridge, the agent, the zone) and removes the config.
 *
 * Modes, because the v0.3 kit cannot talk to the bridge as it is:
 * - `as-is`: the kit points straight at the bridge. The bearer is put in the environment the way
 *   the kit's ADR-001 says (A2A_AUTH_TYPE=bearer, A2A_AUTH_TOKEN), but that support arrived with
 *   the v1.0 line (d36f441); the v0.3 kit sends no Authorization header at all. It also reads the
 *   card at the root `/.well-known/agent-card.json`, where the bridge serves its v1.0 card
 *   (supportedInterfaces), which the v0.3 kit does not understand; the bridge's v0.3 card is at
 *   `/.well-known/agent.json`, which the kit only tries when agent-card.json fails.
 * - `adapted`: the kit points at a loopback adapter in this script that forwards every request to
 *   the bridge unchanged except: (1) it adds `Authorization: Bearer <bearer>` to a request that has
 *   no Authorization header (what ADR-001's injection does in the v1.0 kit; a header the test sets
 *   itself is kept), and (2) it answers `/.well-known/agent-card.json` with the bridge's own v0.3
 *   card from `/.well-known/agent.json`. Card URLs naming the bridge are rewritten to the adapter
 *   so the kit's calls go through it. The bridge's answers are otherwise passed on byte for byte.
 *
 * Options:
 *   --tck <dir>            the kit's work tree (required)
 *   --tck-rev <rev>        the kit commit to name in the report (default: `git rev-parse HEAD` in
 *                          <dir> when it is a git work tree, else "unknown")
 *   --mode <m>             both (default), as-is or adapted
 *   --python <path>        default /usr/bin/python3 (Debian's, not a pyenv or venv one)
 *   --reply-delay-ms <n>   how long the simulated agent "works" before mailing, default 500
 *   --timeout-s <n>        a kit run still going after this is killed, default 900
 *   --out <file>           default scripts/conformance-tck.last.md
 *   --artifacts <dir>      where the kit output, JUnit XML and bridge log are kept (default: a new
 *                          folder under the system temp folder, printed at the end)
 *   --verbose              stream the kit's output to stdout as it runs
 *
 * The command line is in tck/options.ts, the adapter in tck/adapter.ts, the JUnit reading in
 * tck/junit.ts and the report in tck/report.ts.
 *
 * Exit code: 0 when every requested mode ran and the report was written (whatever the tests
 * said), 1 when a kit run did not produce results, 2 for a usage error.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import type { App } from '../src/app.js';
import type { CloudAgent } from '../src/demo/cloud-agent.js';
import { startDemoWorld } from '../src/demo/world.js';
import { createLogger } from '../src/log.js';
import { startAdapter } from './tck/adapter.js';
import { parseJunit } from './tck/junit.js';
import { type Mode, type Options, parseArgs } from './tck/options.js';
import { type ModeResult, counts, report } from './tck/report.js';

/** Everything one mode started; `stop()` ends it all and removes the config folder. */
interface Stack {
  dir: string;
  bridgeBase: string;
  endpoint: string;
  bearer: string;
  app: App;
  agent: CloudAgent;
  stop(): Promise<void>;
}

/** The demo's set-up (src/demo/world.ts), with `mailbox.watch = true` and the bridge log written to `logFile`. */
async function startStack(o: Options, logFile: string): Promise<Stack> {
  const logStream = pino.destination({ dest: logFile, sync: true });
  const world = await startDemoWorld({
    name: 'a2a-mailbridge-tck',
    log: createLogger('info', logStream),
    replyDelayMs: o.replyDelayMs,
    mailboxToml: 'watch = true\nwatch_tick_s = 1',
    // The kit sends far more new tasks a minute than a person would (agents.max_open_tasks, max_per_minute).
    agentToml: 'max_open_tasks = 10000',
    webhookToml: 'max_per_minute = 10000',
  }).catch((err: unknown) => {
    logStream.end();
    throw err;
  });
  const stop = async (): Promise<void> => {
    await world.stop();
    logStream.flushSync();
    logStream.end();
  };
  return { dir: world.dir, bridgeBase: world.app.server.baseUrl, endpoint: world.endpoint, bearer: world.bearer, app: world.app, agent: world.agent, stop };
}

/** Runs run_tck.py in its own process group so that pytest, its child, is killed with it. */
function runKit(o: Options, sutUrl: string, bearer: string, junit: string, outputFile: string): Promise<{ code: number | null; timedOut: boolean; command: string }> {
  const args = ['run_tck.py', '--sut-url', sutUrl, '--category', 'mandatory', '--transports', 'jsonrpc', '--verbose'];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The kit's documented auth injection (ADR-001); honoured from its v1.0 line on, ignored by v0.3.
    A2A_AUTH_TYPE: 'bearer',
    A2A_AUTH_TOKEN: bearer,
    PYTEST_ADDOPTS: `--junitxml=${junit} -o junit_family=xunit1 -p no:cacheprovider -rA`,
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
  };
  delete env.VIRTUAL_ENV;
  delete env.PYTHONPATH;
  delete env.PYTHONHOME;
  const command = `cd ${o.tck} && A2A_AUTH_TYPE=bearer A2A_AUTH_TOKEN=<bearer> PYTEST_ADDOPTS='${env.PYTEST_ADDOPTS}' ${o.python} ${args.join(' ')}`;
  return new Promise((done) => {
    const log = createWriteStream(outputFile);
    const child: ChildProcess = spawn(o.python, args, { cwd: o.tck, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    for (const s of [child.stdout!, child.stderr!]) {
      s.on('data', (c: Buffer) => {
        log.write(c);
        if (o.verbose) process.stdout.write(c);
      });
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, o.timeoutS * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      running = undefined;
      log.end(() => done({ code, timedOut, command }));
    });
  });
}

let running: ChildProcess | undefined;

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
  setTimeout(() => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, 3000).unref();
}

async function runMode(o: Options, mode: Mode): Promise<ModeResult> {
  const bridgeLog = join(o.artifacts, `${mode}.bridge.log`);
  const junit = join(o.artifacts, `${mode}.junit.xml`);
  const outputFile = join(o.artifacts, `${mode}.kit-output.txt`);
  rmSync(junit, { force: true });
  const stack = await startStack(o, bridgeLog);
  let adapter: Awaited<ReturnType<typeof startAdapter>> | undefined;
  try {
    let sutUrl = stack.endpoint;
    if (mode === 'adapted') {
      adapter = await startAdapter(stack.bridgeBase, stack.bearer);
      sutUrl = `${adapter.base}${new URL(stack.endpoint).pathname}`;
    }
    process.stdout.write(`\n[${mode}] bridge   ${stack.endpoint}  (card ${stack.bridgeBase}/.well-known/agent-card.json)\n`);
    process.stdout.write(`[${mode}] bearer   ${stack.bearer}\n`);
    process.stdout.write(`[${mode}] agent    ${stack.agent.url}  (replies after ${o.replyDelayMs} ms; mailbox.watch = true)\n`);
    if (adapter) process.stdout.write(`[${mode}] adapter  ${adapter.base}  (adds the bearer when absent; serves the v0.3 card at agent-card.json)\n`);
    process.stdout.write(`[${mode}] kit      ${o.tck} @ ${o.tckRev}  → --sut-url ${sutUrl}\n`);
    const run = await runKit(o, sutUrl, stack.bearer, junit, outputFile);
    // Let replies still in flight land, so the store's counts are final.
    await stack.agent.idle();
    await new Promise((r) => setTimeout(r, 1500));
    const db = stack.app.bridge.ctx.store;
    const tasksByState: Record<string, number> = db.stats.tasksByState();
    const ledger: Record<string, number> = {};
    for (const l of db.ledger.query({ limit: 100000 })) ledger[l.verdict] = (ledger[l.verdict] ?? 0) + 1;
    const results = existsSync(junit) ? parseJunit(readFileSync(junit, 'utf8')) : null;
    const hits = adapter?.hits ?? [];
    return {
      mode,
      command: run.command,
      exitCode: run.code,
      timedOut: run.timedOut,
      results,
      outputFile,
      bridgeLog,
      tasksByState,
      ledger,
      webhooks: stack.agent.received.length,
      replies: stack.agent.replies.length,
      adapterHits: hits,
      injectedAuth: hits.filter((h) => h.injected).length,
    };
  } finally {
    if (running) killGroup(running);
    await adapter?.close();
    await stack.stop();
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  mkdirSync(o.artifacts, { recursive: true });
  const started = new Date();
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    interrupted = true;
    if (running) killGroup(running);
    process.stderr.write(`conformance-tck: ${sig}, stopping (no report written)\n`);
    setTimeout(() => process.exit(130), 10_000).unref();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const results: ModeResult[] = [];
  for (const mode of o.modes) {
    if (!interrupted) results.push(await runMode(o, mode));
  }
  if (interrupted) {
    process.exitCode = 130;
    return;
  }
  writeFileSync(o.out, report(o, results, started));

  process.stdout.write('\n');
  for (const m of results) {
    const c = m.results ? counts(m.results) : undefined;
    process.stdout.write(
      c
        ? `[${m.mode}] ${c.total} tests: ${c.passed} passed, ${c.failed} failed, ${c.error} errors, ${c.skipped} skipped\n`
        : `[${m.mode}] no results (kit exit ${m.timedOut ? 'timed out' : m.exitCode}); see ${m.outputFile}\n`,
    );
  }
  process.stdout.write(`report: ${o.out}\nartifacts: ${o.artifacts}\n`);
  process.exitCode = results.every((m) => m.results !== null) ? 0 : 1;
}

main().catch((err: unknown) => {
  if (running) killGroup(running);
  process.stderr.write(`conformance-tck: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
