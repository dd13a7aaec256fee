/**
 * Shared parts of the mailbox fault tests (mailbox.test.ts, mailbox-big-folder.test.ts): a harness
 * on a fresh folder, a proxy in front of the file's Dovecot, a Hermes-style call, and the checks of
 * what a caller is shown while the mailbox fails.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { HealthJson } from '../../../src/a2a/health.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import { iso } from '../../../src/core/time.js';
import { hermesBody, startHarness, type Harness, type HarnessOptions } from '../../helpers/bridge-harness.js';
import type { DovecotHandle } from '../../helpers/dovecot.js';
import { healthOf, newContext, statusMessage } from './caller-view.js';
import { startImapProxy, type ImapProxy } from './imap-faults.js';

/**
 * The helpers bound to a test file: `dovecot()` gives its shared Dovecot (read when called, as it
 * is started in `beforeAll`), and whatever they start is closed by the file's `afterEach`, which
 * runs `cleanup` in reverse.
 */
export function mailboxFaults(dovecot: () => DovecotHandle, cleanup: (() => Promise<void>)[]) {
  let folders = 0;
  return {
    /** A harness reading a fresh folder of `server` (default: the shared Dovecot). */
    harness: async (o: Partial<HarnessOptions> & { server?: DovecotHandle; folder?: string } = {}): Promise<Harness & { folder: string }> => {
      const server = o.server ?? dovecot();
    const folder = o.folder ?? `F${++folders}`;
    await server.createFolder(folder);
    const h = await startHarness({ ...o, dovecot: o.dovecot ?? server, mailboxToml: `folder = "${folder}"\n${o.mailboxToml ?? ''}` });
    cleanup.push(async () => {
      await h.close();
      rmSync(h.configDir.dir, { recursive: true, force: true });
    });
    await h.app.bridge.idle(); // the start-up check
    return Object.assign(h, { folder });
    },
    /** A TCP proxy in front of the shared Dovecot (`refuse`: connections refused until told otherwise). */
    proxy: async (mode: 'pass' | 'refuse' = 'pass'): Promise<ImapProxy> => {
      const p = await startImapProxy(dovecot().port, mode);
      cleanup.push(() => p.close());
      return p;
    },
    /** The file in the shared Dovecot's Maildir (folder `.name/`, Maildir++) of the message whose text holds `marker`. */
    messageFile: (folder: string, marker: string): string => {
      for (const sub of ['cur', 'new']) {
        const dir = join(dovecot().maildir, `.${folder}`, sub);
        for (const f of readdirSync(dir)) if (readFileSync(join(dir, f), 'latin1').includes(marker)) return join(dir, f);
      }
      throw new Error(`no message with ${marker} in ${folder}`);
    },
  };
}

/** One Hermes-style call: HTTP 200, a task result (never a JSON-RPC error), and the time it took. */
export async function call(h: Harness, text: string, ctx: string): Promise<{ task: V1Task; ms: number }> {
  const started = performance.now();
  const r = await h.rpc(hermesBody(text, ctx));
  const ms = performance.now() - started;
  expect(r.status).toBe(200);
  expect(r.json.error).toBeUndefined();
  return { task: r.json.result!.task!, ms };
}

/** Starts a task whose webhook is accepted (WORKING); returns its context, id and envelope. */
export async function working(h: Harness): Promise<{ ctx: string; id: string; n: number }> {
  const ctx = newContext();
  const { task } = await call(h, 'Summarise the report', ctx);
  expect(task.status.state).toBe('TASK_STATE_WORKING');
  return { ctx, id: task.id, n: h.receiver.requests.length };
}

const UNREACHABLE = /The mailbox is unreachable since (\S+Z): ([\s\S]*?)(?: \(last successful check (\S+Z)\))?; replies will be read once it is back\./;

/**
 * A poll while the mailbox fails: 200, WORKING, the status text names the error and since when,
 * and /health agrees. Returns what was shown.
 */
export async function expectUnreachable(h: Harness, ctx: string, error: RegExp): Promise<{ since: string; lastSuccess: string | null; text: string; health: HealthJson; ms: number }> {
  const { task, ms } = await call(h, 'status', ctx);
  expect(task.status.state).toBe('TASK_STATE_WORKING');
  const text = statusMessage(task);
  const m = UNREACHABLE.exec(text);
  expect(m, text).not.toBeNull();
  expect(m![2]).toMatch(error);
  const health = await healthOf(h);
  expect(health.status).toBe('degraded');
  expect(health.mailbox.lastError).toBe(m![2]);
  // /health has milliseconds, the status text (for people) whole seconds.
  expect(toSecond(health.mailbox.errorSince)).toBe(m![1]);
  expect(toSecond(health.mailbox.lastSuccessAt)).toBe(m![3] ?? null);
  expect(health.mailbox.lastResult).toBe('failed');
  expect(text).toContain(`Call again with context_id ${ctx} to check (send "status").`);
  return { since: m![1]!, lastSuccess: m![3] ?? null, text, health, ms };
}

/** An ISO timestamp cut to the second, as the status text prints it (`…:05Z`); null stays null. */
export function toSecond(t: string | null): string | null {
  return t === null ? null : iso(Date.parse(t));
}

/** Counts of each verdict in a list of ledger rows. */
export function tally(verdicts: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of verdicts) out[v] = (out[v] ?? 0) + 1;
  return out;
}
