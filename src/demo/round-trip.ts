import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { createLogger } from '../log.js';
import { DEMO_AGENT_DOMAIN, startDemoWorld, type DemoWorld } from './world.js';

export interface DemoOptions {
  /** Print the bridge's JSON log lines to stderr. */
  verbose?: boolean;
  /** Where to write the transcript; stdout by default. */
  out?: (line: string) => void;
  /** How long the simulated cloud agent waits before it mails its reply, in ms (default {@link DEMO_REPLY_DELAY_MS}). */
  replyDelayMs?: number;
  /**
   * Registers what to undo, and the exit status to take, when stdout is closed under the demo
   * (`demo | head`: src/cli/closed-pipe.ts `whenStdoutCloses`); returns the unregistering function.
   */
  whenOutputCloses?: (undo: () => Promise<number>) => () => void;
}

/** The status of a demo whose output was cut (its reader closed the pipe): 128 + SIGPIPE's number, as a shell reports it. */
const CUT_SHORT = 128 + constants.signals.SIGPIPE;

/** The simulated cloud agent's default wait before it mails its reply, in ms: long enough to show WORKING first. */
export const DEMO_REPLY_DELAY_MS = 300;

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/**
 * The caller side as Hermes does it (Hermes Agent, plugins/platforms/a2a/tools.py): a new messageId
 * per call, the same contextId, one text part, never a taskId. The SDK takes its in-memory form
 * (role 1 = ROLE_USER, parts as `{content: {$case, value}}`) and writes the ProtoJSON.
 */
function hermesMessage(text: string, contextId: string) {
  return {
    message: { role: 1, parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }], messageId: hex(16), contextId },
  };
}

type SdkPart = { content?: { $case: string; value: unknown } };
type SdkTask = { id: string; status: { state: number; message?: { parts?: SdkPart[] } }; artifacts?: { parts?: SdkPart[] }[] };

/** The SDK's SendMessage result is a Task or a Message; the demo expects a Task. */
function asTask(r: unknown): SdkTask {
  if (typeof r !== 'object' || r === null || !('status' in r)) throw new Error(`expected a Task, got ${JSON.stringify(r)}`);
  return r as SdkTask;
}

/**
 * The text Hermes shows: the first artifact with text, else status.message, its text parts joined
 * with line breaks (Hermes Agent, plugins/platforms/a2a/tools.py).
 */
function shownText(task: SdkTask): string {
  const fromParts = (parts: SdkPart[] | undefined): string =>
    (parts ?? [])
      .filter((p) => p.content?.$case === 'text')
      .map((p) => p.content?.value as string)
      .join('\n');
  for (const a of task.artifacts ?? []) {
    const t = fromParts(a.parts);
    if (t !== '') return t;
  }
  return fromParts(task.status?.message?.parts);
}

const STATE_NAMES = ['UNSPECIFIED', 'SUBMITTED', 'WORKING', 'COMPLETED', 'FAILED', 'CANCELED', 'INPUT_REQUIRED', 'REJECTED', 'AUTH_REQUIRED'];

/**
 * `a2a-mailbridge demo`: a full round trip on loopback. It writes a real config with
 * 0600 secret files into a temporary folder, starts a DNS zone serving the agent's DKIM key, a
 * simulated cloud agent (a webhook receiver that verifies the Standard Webhooks signature and the
 * bearer, then writes a DKIM-signed, provider-stamped reply into a Maildir), and the bridge; then
 * drives the bridge with the official A2A client the way Hermes does. Everything is removed after,
 * also when SIGINT (Ctrl-C) or SIGTERM stops it: the folder holds the bearer, the webhook secret,
 * the config and the store. The process then exits 128 + the signal's number (130, 143), as a shell
 * reports a command a signal ended.
 *
 * @returns true when the second call came back COMPLETED with the labelled reply
 */
export async function demo(o: DemoOptions = {}): Promise<boolean> {
  let world: DemoWorld | undefined;
  let signalled: NodeJS.Signals | undefined;
  /** Set once a signal or a closed stdout stops the demo: the steps still under way print nothing more. */
  let stopping = false;
  const write = o.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const out = (line: string): void => {
    if (!stopping) write(line);
  };
  // Registered on the world's one stop before the demo's own wait on it (finally, below), so the
  // exit comes first: the demo's failing call then prints nothing more.
  const exitOnceStopped = (w: DemoWorld, s: NodeJS.Signals): void => void w.stop().finally(() => process.exit(128 + constants.signals[s]));
  const onSignal = (s: NodeJS.Signals): void => {
    if (signalled !== undefined) return;
    signalled = s;
    stopping = true;
    process.stderr.write(`demo: stopped by ${s}; removing its temporary folder\n`);
    if (world) exitOnceStopped(world, s);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    world = await startDemoWorld({ name: 'a2a-mailbridge-demo', log: createLogger(o.verbose ? 'info' : 'silent'), replyDelayMs: o.replyDelayMs ?? DEMO_REPLY_DELAY_MS });
  } catch (err) {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    throw err;
  }
  if (signalled !== undefined) {
    exitOnceStopped(world, signalled);
    await world.stop();
    return false;
  }
  const started = world;
  // Output cut short (`demo | head`): the folder of secrets is removed all the same before the exit.
  const offClosed = o.whenOutputCloses?.(async () => {
    stopping = true;
    await started.stop();
    return CUT_SHORT;
  });
  try {
    const { app, agent, config, zone, maildir, endpoint } = world;
    const bridgeBearer = world.bearer;
    const authedFetch: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${bridgeBearer}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })],
      }),
    );
    const client: Client = await factory.createFromUrl(`${endpoint}/`);

    out('a2a-mailbridge demo: a full round trip on loopback');
    out(`  bridge       ${endpoint}  (card: ${endpoint}/.well-known/agent-card.json)`);
    out(`  cloud agent  ${agent.url}  (verifies the Standard Webhooks signature and the bearer)`);
    out(`  mailbox      Maildir ${maildir}  (read-only; replies DKIM-signed by ${DEMO_AGENT_DOMAIN}, key served by DNS at ${zone.address})`);
    out('');

    const contextId = `ctx-${hex(8)}`;
    const ask = 'Find three recent papers on retrieval-augmented generation and summarise each in one line.';
    out(`1) SendMessage  context ${contextId}`);
    out(`   → ${ask}`);
    const first = await client.sendMessage(hermesMessage(ask, contextId) as never);
    const task1 = asTask(first);
    const state1 = STATE_NAMES[task1.status.state] ?? String(task1.status.state);
    out(`   ← TASK_STATE_${state1}  task ${task1.id}`);
    for (const line of shownText(task1).split('\n')) out(`     ${line}`);
    out('');

    await agent.idle();
    const hook = agent.received[0];
    out(`   cloud agent: webhook ${hook?.id ?? '?'} verified, turn ${hook?.envelope.turn ?? '?'}; reply mailed to ${hook?.envelope.reply_to ?? '?'}`);
    out('');

    out(`2) SendMessage  same context, new messageId (this is a poll)`);
    out('   → status');
    const second = await client.sendMessage(hermesMessage('status', contextId) as never);
    const task2 = asTask(second);
    const state2 = STATE_NAMES[task2.status.state] ?? String(task2.status.state);
    out(`   ← TASK_STATE_${state2}  task ${task2.id}`);
    const shown = shownText(task2);
    for (const line of shown.split('\n')) out(`     ${line}`);
    out('');

    const ledger = app.bridge.ctx.store.ledger.query({ limit: 10 });
    out(`ledger: ${ledger.map((l) => `${l.verdict} (${l.messageId ?? 'no Message-ID'})`).join(', ') || 'empty'}`);
    const ok =
      state1 === 'WORKING' &&
      state2 === 'COMPLETED' &&
      task2.id === task1.id &&
      shown.startsWith(config.agents[0]!.untrustedLabel) &&
      agent.received.length === 1;
    out(ok ? 'demo: OK (one webhook, one authenticated reply, task completed)' : 'demo: FAILED (see above)');
    return ok;
  } finally {
    await world.stop();
    offClosed?.();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
