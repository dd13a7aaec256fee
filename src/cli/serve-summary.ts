/**
 * What `serve` prints on stderr once it listens: a short summary a person can check at
 * a glance — version, config, store, mailbox and whether it answered, watch mode, each agent and
 * its webhook host, where the log goes — and every start-up warning (an unreachable mailbox,
 * RFC 2606 example names still configured). No secret and no path of a webhook URL (it may be a
 * capability): only its origin.
 */
import { statSync } from 'node:fs';
import { VERSION } from '../a2a/agent-card.js';
import type { Config } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { exampleIdentities, exampleIdentitiesText } from '../config/example-identities.js';
import type { CheckSummary } from '../core/mail-check.js';

/** How the first mailbox check went: its summary, or null when it was still running after the wait. */
export interface StartupFacts {
  config: Config;
  /** The JSON-RPC URL of each agent, as its card names it. */
  endpoints: string[];
  firstCheck: CheckSummary | null;
  /** How long serve waited for the first check, in ms. */
  waitedMs: number;
  /** Where the log goes, in words (`stderr`, `the journal`, a file). */
  logTo: string;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The store file and its -wal/-shm, added up; 0 for files not there. */
export function storeBytes(path: string): number {
  return ['', '-wal', '-shm'].reduce((sum, suffix) => {
    try {
      return sum + statSync(`${path}${suffix}`).size;
    } catch {
      return sum;
    }
  }, 0);
}

function mailboxWhere(c: Config): string {
  const m = c.mailbox;
  if (m.kind === 'maildir') return `maildir ${m.maildirPath}`;
  const i = m.imap!;
  return `imap ${i.user} at ${i.host}:${i.port}${i.tls ? ' (TLS)' : ''}, folder ${m.folder}`;
}

/** The summary lines, then one `warning:` line per start-up warning. */
export function startupSummary(f: StartupFacts): { lines: string[]; warnings: string[] } {
  const { config } = f;
  const check = f.firstCheck;
  const reach =
    check === null ? `first check still running after ${Math.round(f.waitedMs / 1000)} s (the log says how it ends)` : check.ok ? `reachable (${check.fetched === 0 ? 'nothing new' : `${check.fetched} new`})` : 'UNREACHABLE';
  const watch = config.mailbox.watch
    ? `on: replies, webhook retries and deadlines move every ${config.mailbox.watchTickMs / 1000} s without a call`
    : "off: replies, webhook retries and deadlines move only on callers' calls (mailbox.watch = true to change)";
  const lines = [
    `a2a-mailbridge ${VERSION} is serving`,
    `  config   ${config.file}`,
    `  store    ${config.store.path} (${bytes(storeBytes(config.store.path))})`,
    `  mailbox  ${mailboxWhere(config)}: ${reach}`,
    `  watch    ${watch}`,
    ...config.agents.map((a, i) => `  agent    ${a.name}  ${f.endpoints[i] ?? '?'}  → webhook ${a.webhook.url.origin} (${a.webhook.auth})`),
    `  log      ${f.logTo}`,
  ];
  const warnings: string[] = [];
  if (check && !check.ok) warnings.push(`the mailbox is unreachable: ${check.error ?? 'unknown error'}; replies are read once it is back (${commandLine(config.file, 'doctor')} checks the settings)`);
  const examples = exampleIdentities(config);
  if (examples.length) warnings.push(`${exampleIdentitiesText(examples)}; replace them in ${config.file}`);
  return { lines, warnings };
}
