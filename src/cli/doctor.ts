import { statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { readConfigAndPlace, type ConfigPlaceProblem } from '../config/config-file.js';
import { dataPlaceProblem, storeReadableByOthers } from '../config/data-place.js';
import { ConfigError, ConfigErrors, loadConfig, type Config } from '../config/config.js';
import { tomlSyntaxMessage } from '../config/toml-syntax.js';
import { exampleIdentities, exampleIdentitiesText } from '../config/example-identities.js';
import { readSecretFile, SecretFileError } from '../config/secret-file.js';
import { missingSecretFix } from '../config/secret-kinds.js';
import { claimFiles, Store, StoreError, storeWasHere } from '../store/store.js';
import { goneStoreText } from './open-store.js';
import { TERMINAL_STATES, type TaskState } from '../store/task-state.js';
import { openMailbox } from '../app.js';
import { MailboxError } from '../uplink/mailbox.js';
import { checkListenAndPort } from './doctor-listen.js';
import { hermesSnippet, type HermesSnippet } from './hermes-snippet.js';
import { unusedSecretChecks } from './doctor-unused-secrets.js';
import { mailboxFix } from './mailbox-fix.js';
import { plural } from '../plural.js';
import { commandLine, shellLine, shellWord } from '../config/config-path.js';
import { clean, cleanLines, printJson } from './format.js';
import { probeDnsServer, probeWebhook } from './probes.js';

/** `warn`: works, but is not what a real set-up has (an example name still configured); does not fail doctor. */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

/** One line of the report. `fix` is one line, present on `fail` and `warn` (and on `skip`, naming what to fix first). */
export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

export interface DoctorReport {
  ok: boolean;
  config: string;
  checks: Check[];
  /** Null when the config does not load. */
  hermes: HermesSnippet | null;
}

/** A `*_file` key the loader reads, from the raw TOML (so each file is checked even when the loader stops at the first). */
export interface SecretRef {
  key: string;
  path: string;
  what: string;
  /** The command (after `a2a-mailbridge`) that writes this file, for a file the product writes itself. */
  writtenBy?: string;
}

export type Doc = Record<string, unknown>;
const table = (v: unknown): Doc => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Doc) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * The secret files the loader would read for this document, with what each should hold.
 * @param configFile the config file the document is, for the commands named (src/config/config-path.ts)
 */
export function secretRefs(doc: Doc, baseDir: string, configFile = ''): SecretRef[] {
  const out: SecretRef[] = [];
  const add = (key: string, value: unknown, what: string, writtenBy?: string): void => {
    const p = str(value);
    if (p !== undefined) out.push({ key, path: resolve(baseDir, p), what, ...(writtenBy ? { writtenBy } : {}) });
  };
  add('server.bearer_file', table(doc.server).bearer_file, "the facade's bearer (e.g. openssl rand -hex 32)");
  const mailbox = table(doc.mailbox);
  if ((str(mailbox.kind) ?? 'imap') === 'imap') {
    const imap = table(mailbox.imap);
    if (str(imap.auth) === 'oauth2') {
      const login = `auth login ${shellWord(str(imap.oauth2_provider) ?? (str(mailbox.provider) === 'outlook' ? 'microsoft' : 'google'))}`;
      add('mailbox.imap.oauth2_refresh_token_file', imap.oauth2_refresh_token_file, `the OAuth2 refresh token (write it with: ${commandLine(configFile, login)})`, login);
    }
    else add('mailbox.imap.password_file', imap.password_file, 'your IMAP app password');
  }
  const agents = Array.isArray(doc.agents) ? doc.agents : [];
  agents.forEach((a, i) => {
    const hook = table(table(a).webhook);
    const auth = str(hook.auth) ?? 'standard-webhooks';
    if (auth === 'bearer' || auth === 'both') add(`agents[${i}].webhook.bearer_file`, hook.bearer_file, "the token the agent's webhook expects");
    if (auth === 'standard-webhooks' || auth === 'both') add(`agents[${i}].webhook.secret_file`, hook.secret_file, 'the whsec_ signing secret shared with the webhook');
  });
  return out;
}

/**
 * Splits a message of the form `<problem>; <fix>` (the loader's and the secret reader's style).
 * A leading `run: ` of the fix is dropped; without `; ` there is no fix. A `; run: ` splits before
 * any other `; `: the problem names the path as it is, and a path may hold `; ` itself.
 */
export function splitFix(message: string): { problem: string; fix?: string } {
  const run = message.lastIndexOf('; run: ');
  const i = run >= 0 ? run : message.indexOf('; ');
  if (i < 0) return { problem: message };
  return { problem: message.slice(0, i), fix: message.slice(i + 2).replace(/^run: /, '') };
}

function checkSecret(ref: SecretRef, configFile: string): Check {
  const name = `secret ${ref.key}`;
  try {
    readSecretFile(ref.path, ref.key, configFile);
    const mode = (statSync(ref.path).mode & 0o777).toString(8).padStart(4, '0');
    return { name, status: 'ok', detail: `${ref.path} (mode ${mode}, yours)` };
  } catch (err) {
    if (!(err instanceof SecretFileError)) throw err;
    if ((err.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
      // A file the product writes (the OAuth2 grant) is made by its command, never by hand.
      if (ref.writtenBy) return { name, status: 'fail', detail: `${ref.path} does not exist yet`, fix: `sign in once with: ${commandLine(configFile, ref.writtenBy)}` };
      return { name, status: 'fail', detail: `secret file ${ref.path} does not exist`, fix: missingSecretFix(ref.key, ref.path, configFile) };
    }
    if (/placeholder/.test(err.message)) {
      return { name, status: 'fail', detail: `${ref.path} still holds a placeholder`, fix: `write ${ref.what} into ${ref.path} (the file stays mode 0600)` };
    }
    const { problem, fix } = splitFix(err.message.replace(`${ref.key}: `, ''));
    return { name, status: 'fail', detail: problem, fix: fix ?? `point ${ref.key} at a regular file of yours with mode 0600` };
  }
}

function checkConfigFile(file: string): { check: Check; doc?: Doc } {
  const name = 'config file';
  let doc: Doc;
  let text: string;
  let unsafe: ConfigPlaceProblem | null;
  try {
    ({ text, problem: unsafe } = readConfigAndPlace(file));
  } catch (err) {
    // The loader's fix: a missing file's names the init that writes it (src/config/config-path.ts).
    const { problem, fix } = splitFix((err as ConfigError).message.replace(/^config file: /, ''));
    return { check: { name, status: 'fail', detail: problem, fix: fix ?? 'point --config at a config file you can read' } };
  }
  try {
    doc = parseToml(text);
  } catch (err) {
    const { problem, fix } = splitFix(tomlSyntaxMessage(file, text, err));
    return { check: { name, status: 'fail', detail: problem, fix: fix ?? 'correct the TOML syntax' } };
  }
  if (unsafe) return { check: { name, status: 'fail', detail: unsafe.problem, fix: unsafe.fix }, doc };
  return { check: { name, status: 'ok', detail: `${file} (TOML ok)` }, doc };
}

/** One failed `config` check per key error: each of {@link ConfigErrors} with its own fix. */
function configFailures(err: ConfigError, file: string): Check[] {
  return (err instanceof ConfigErrors ? err.errors : [err]).map((e) => {
    const { problem, fix } = splitFix(e.message);
    return { name: 'config', status: 'fail', detail: problem, fix: fix ?? `edit ${e.key} in ${file}` };
  });
}

function checkConfig(file: string): { checks: Check[]; config?: Config } {
  try {
    const config = loadConfig(file);
    const m = config.mailbox;
    const where = m.kind === 'imap' ? `imap ${m.imap!.host}:${m.imap!.port} ${m.folder}` : `maildir ${m.maildirPath}`;
    const agents = config.agents.map((a) => a.name).join(', ');
    return { checks: [{ name: 'config', status: 'ok', detail: `listen ${config.server.host}:${config.server.port}, mailbox ${where}, agents: ${agents}` }], config };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const secretError = (err instanceof ConfigErrors ? err.errors : [err]).find((e) => e.cause instanceof SecretFileError);
    if (secretError) {
      // The secret file's own check says what is wrong with it; the rest of the config is still
      // validated (every secret read as ''), so a second mistake is not hidden behind the first.
      try {
        loadConfig(file, { skipSecrets: true });
      } catch (rest) {
        if (!(rest instanceof ConfigError)) throw rest;
        return { checks: configFailures(rest, file) };
      }
      return { checks: [{ name: 'config', status: 'skip', detail: `valid apart from the secret file of ${secretError.key}`, fix: `fix the secret file of ${secretError.key} first` }] };
    }
    return { checks: configFailures(err, file) };
  }
}

function checkStore(path: string, configFile: string): Check {
  const name = 'store';
  // The rule serve applies before it opens the store (src/config/data-place.ts).
  const unsafe = dataPlaceProblem(path, 'store', 'store.path');
  if (unsafe) return { name, status: 'fail', detail: unsafe.problem, fix: unsafe.fix };
  let st;
  try {
    st = statSync(path);
  } catch {
    // A serve ran on it before: the store was moved or deleted, and the next serve would start an empty one.
    if (storeWasHere(path)) return { name, status: 'fail', detail: goneStoreText(path, commandLine(configFile, 'serve')), fix: `put the store back at ${path}, restore a backup there, or, to start with an empty store on purpose, delete ${claimFiles(path).lock}` };
    return { name, status: 'ok', detail: `${path} does not exist yet; serve creates it on its first start` };
  }
  const dirMode = statSync(dirname(path)).mode & 0o777;
  if (st.mode & 0o077 && dirMode & 0o077) {
    return { name, status: 'fail', detail: `${path} and its folder are open to others; the store holds mail and reply tokens`, fix: shellLine('chmod', '700', dirname(path)) };
  }
  try {
    const db = Store.open(path, { readOnly: true });
    let version: number;
    let counts: ReturnType<typeof db.stats.tasksByState>;
    try {
      const check = db.quickCheck();
      if (!check.ok) {
        return { name, status: 'fail', detail: `${path} is damaged (quick_check: ${check.detail})`, fix: 'restore it from a backup (a2a-mailbridge backup) or move it aside to start empty' };
      }
      version = db.schemaVersion();
      counts = db.stats.tasksByState();
    } finally {
      db.close();
    }
    const total = Object.values(counts).reduce((a, b) => a + (b ?? 0), 0);
    const open = Object.entries(counts).filter(([s]) => !TERMINAL_STATES.has(s as TaskState)).reduce((a, [, n]) => a + (n ?? 0), 0);
    return { name, status: 'ok', detail: `${path}: quick_check ok, schema version ${version}, ${plural(total, 'task')}, ${open} open` };
  } catch (err) {
    if (!(err instanceof StoreError)) throw err;
    const { problem, fix } = splitFix(err.message);
    return { name, status: 'fail', detail: problem, fix: fix ?? 'move the file aside; serve starts an empty store' };
  }
}

/** A warning when the store's files are readable by others (src/config/data-place.ts, storeReadableByOthers); null when none is. */
function checkStoreMode(path: string): Check | null {
  const r = storeReadableByOthers(path);
  if (!r) return null;
  const what = r.files.length === 1 ? `${r.files[0]} is` : `${r.files.join(', ')} are`;
  return { name: 'store mode', status: 'warn', detail: `${what} readable by others (mode ${r.mode}); the store holds the agents' answers, task text and reply tokens`, fix: r.mine ? `serve makes them 0600 when it next starts; or now: ${shellLine('chmod', '600', ...r.files)}` : shellLine('chmod', '600', ...r.files) };
}

/** The log file's place, by the rule serve applies before it writes there (src/config/data-place.ts). */
function checkLogPlace(file: string): Check {
  const unsafe = dataPlaceProblem(file, 'log', 'log.file');
  if (unsafe) return { name: 'log', status: 'fail', detail: unsafe.problem, fix: unsafe.fix };
  return { name: 'log', status: 'ok', detail: `${file}: its folder and files are yours, writable by no one else` };
}

async function checkMailbox(config: Config, passwordOk: boolean): Promise<Check> {
  const m = config.mailbox;
  if (m.kind === 'maildir') {
    const dir = m.maildirPath!;
    for (const sub of ['', 'cur', 'new']) {
      const p = join(dir, sub);
      let isDir = false;
      try {
        isDir = statSync(p).isDirectory();
      } catch {
        /* missing */
      }
      if (!isDir) return { name: 'mailbox', status: 'fail', detail: `${p} is not a folder`, fix: `set mailbox.maildir.path to a Maildir (holding cur/ and new/), or create one: ${shellLine('mkdir', '-p', `${dir}/cur`, `${dir}/new`, `${dir}/tmp`)}` };
    }
    return { name: 'mailbox', status: 'ok', detail: `maildir ${dir}: cur/ and new/ present` };
  }
  const imap = m.imap!;
  const target = `${imap.user} at ${imap.host}:${imap.port}${imap.tls ? ' (TLS)' : ''}`;
  if (!passwordOk) return { name: 'mailbox', status: 'skip', detail: `IMAP login as ${target} not tried`, fix: 'fix mailbox.imap.password_file first' };
  const mailbox = openMailbox(config);
  try {
    // No narrowing terms: the check logs in, EXAMINEs the folder and logs out; nothing is searched or fetched.
    const r = await mailbox.check({ watermark: { uidValidity: null, lastUid: 0 }, fromAddresses: [], subjectContains: [], maxFetch: 0, maxMessageBytes: 1024 });
    return { name: 'mailbox', status: 'ok', detail: `IMAP login as ${target} ok, EXAMINE ${m.folder} ok (UIDVALIDITY ${r.uidValidity}); read-only, nothing fetched` };
  } catch (err) {
    if (!(err instanceof MailboxError)) throw err;
    return { name: 'mailbox', status: 'fail', detail: err.message, fix: mailboxFix(err, m) };
  } finally {
    await mailbox.close();
  }
}

async function checkWebhook(config: Config, i: number): Promise<Check> {
  const agent = config.agents[i]!;
  const url = agent.webhook.url;
  const key = `agents[${i}].webhook.url`;
  const name = `webhook ${agent.name}`;
  // The path of a webhook URL may be a capability: only the origin is printed.
  const r = await probeWebhook(url, agent.webhook.timeoutMs);
  if (r.ok) return { name, status: 'ok', detail: `${url.origin}: ${r.detail}` };
  const fix =
    r.stage === 'dns'
      ? `check the host name in ${key}, or this machine's DNS`
      : r.stage === 'tls'
        ? `the certificate does not verify (${r.code}); webhook deliveries would fail the same way: check ${key}`
        : r.code === 'ETIMEDOUT'
          ? `check ${key}; a firewall or proxy may drop the connection`
          : `check ${key}: nothing accepted the connection (${r.code})`;
  return { name, status: 'fail', detail: `${url.origin}: ${r.message}`, fix };
}

async function checkDns(config: Config, server: string): Promise<Check> {
  const domains = [...new Set(config.agents.map((a) => a.dkimDomain))];
  const details: string[] = [];
  for (const d of domains) {
    const r = await probeDnsServer(server, d, 3000);
    if (!r.ok) {
      return { name: `dns ${server}`, status: 'fail', detail: r.message, fix: `[dns] servers: use a server that answers for ${d}, or remove the list to use the system resolver` };
    }
    details.push(r.detail);
  }
  return { name: `dns ${server}`, status: 'ok', detail: details.join('; ') };
}

/**
 * Runs every check in order; a check that depends on an earlier failure is `skip`ped. Network
 * checks are read-only: IMAP logs in and EXAMINEs, the webhook probe sends no HTTP request.
 */
export async function doctor(configFile: string): Promise<DoctorReport> {
  const file = isAbsolute(configFile) ? configFile : resolve(configFile);
  const checks: Check[] = [];
  const report: DoctorReport = { ok: false, config: file, checks, hermes: null };
  const first = checkConfigFile(file);
  checks.push(first.check);
  if (!first.doc) return report;
  const refs = secretRefs(first.doc, dirname(file), file);
  // The commands a fix names carry --config unless this is the config they find by themselves (src/config/config-path.ts).
  const secretChecks = refs.map((r) => checkSecret(r, file));
  checks.push(...secretChecks);
  checks.push(...unusedSecretChecks(first.doc, file, refs));
  // A config file others may write is refused by the loader too: said once, by the file's check.
  const { checks: configChecks, config } = first.check.status === 'fail' ? { checks: [{ name: 'config', status: 'skip', detail: 'not validated while the config file check fails', fix: 'fix the config file first' } as Check], config: undefined } : checkConfig(file);
  checks.push(...configChecks);
  if (!config) {
    checks.push({ name: 'store, mailbox, webhook', status: 'skip', detail: 'not checked without a valid config', fix: 'fix the config first' });
  } else {
    checks.push(checkStore(config.store.path, config.file));
    const storeMode = checkStoreMode(config.store.path);
    if (storeMode) checks.push(storeMode);
    const listen = await checkListenAndPort(config);
    checks.push(listen.check);
    if (config.log.file !== undefined) checks.push(checkLogPlace(config.log.file));
    checks.push(await (await import('./doctor-mail.js')).checkLatestTaggedMail(config));
    const passwordOk = secretChecks.find((c) => c.name === 'secret mailbox.imap.password_file')?.status !== 'fail';
    checks.push(await checkMailbox(config, passwordOk));
    for (let i = 0; i < config.agents.length; i++) checks.push(await checkWebhook(config, i));
    for (const server of config.dnsServers) checks.push(await checkDns(config, server));
    const examples = exampleIdentities(config);
    if (examples.length > 0) {
      checks.push({ name: 'example identities', status: 'warn', detail: exampleIdentitiesText(examples), fix: `set ${examples.map((e) => e.key).join(', ')} in ${file} to the real ${examples.length === 1 ? 'value' : 'values'}` });
    }
    const tokenFile = refs.find((r) => r.key === 'server.bearer_file')?.path ?? 'your bearer file';
    report.hermes = hermesSnippet(config, tokenFile, listen.livePort);
  }
  report.ok = checks.every((c) => c.status === 'ok' || c.status === 'warn');
  return report;
}

/** The human report: one line per check (status, name, detail), an indented `fix:` line under each failure, then the Hermes snippet. */
export function formatDoctor(r: DoctorReport): string {
  const width = Math.max(...r.checks.map((c) => c.name.length));
  const lines = [`a2a-mailbridge doctor: ${r.config}`];
  for (const c of r.checks) {
    lines.push(clean(`${c.status.padEnd(4)}  ${c.name.padEnd(width)}  ${c.detail}`));
    if (c.fix && c.status !== 'ok') lines.push(clean(`      fix: ${c.fix}`));
  }
  if (r.hermes) {
    lines.push('', `Hermes: add this to its config.yaml; the token is the content of ${r.hermes.tokenFile} (not printed here):`, '', cleanLines(r.hermes.yaml));
  }
  const failed = r.checks.filter((c) => c.status === 'fail').length;
  const skipped = r.checks.filter((c) => c.status === 'skip').length;
  const warned = r.checks.filter((c) => c.status === 'warn').length;
  const warnings = warned ? `${plural(warned, 'warning')} to fix before real use` : '';
  const summary = !r.ok ? `${plural(failed, 'check')} failed${skipped ? `, ${skipped} skipped` : ''}${warned ? `; ${warnings}` : ''}` : warned ? `no check failed, but ${warnings}` : 'all checks passed';
  lines.push('', summary);
  return lines.join('\n');
}

/**
 * `a2a-mailbridge doctor [--json]`: checks the config, each secret file, the store (read-only),
 * that server.listen can be bound (or is held by this config's running bridge), the mailbox (IMAP
 * login and EXAMINE, or the Maildir folders), each webhook's DNS and TCP/TLS reachability without
 * waking the agent, and the configured DNS servers; prints the Hermes snippet.
 * @returns 0 when no check failed (warnings, such as example names still configured, do not fail), else 1
 */
export async function runDoctor(configFile: string, o: { json?: boolean }): Promise<number> {
  const report = await doctor(configFile);
  if (o.json) printJson(report);
  else process.stdout.write(`${formatDoctor(report)}\n`);
  return report.ok ? 0 : 1;
}
