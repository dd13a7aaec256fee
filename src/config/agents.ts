/** The `[[agents]]` tables of the config: one cloud agent each, with its webhook. */
import { shownUrl } from './shown-url.js';
import { Webhook } from 'standardwebhooks';
import type { AgentConfig, WebhookAuth, WebhookConfig } from './config.js';
import { ConfigError, type Fields } from './fields.js';
import { ADDRESS_RE, isLoopbackLiteral, secret } from './values.js';

/**
 * Per-agent caps against a runaway caller (a local agent in a loop created 10,000 tasks and woke
 * the cloud agent 10,000 times in 30 s): room for a person's fan-out of parallel jobs, not for a loop.
 */
export const DEFAULT_MAX_OPEN_TASKS = 20;
export const DEFAULT_WEBHOOKS_PER_MINUTE = 10;
/** The deadlines a task may have, in seconds: `deadline_s` of an agent, and a caller's metadata `deadline_s` (src/a2a/params.ts): 10 s to 30 days. */
export const DEADLINE_RANGE_S = [10, 30 * 86400] as const;

const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const TAG_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const DOMAIN_RE = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

/** Standard Webhooks secrets: `whsec_` + base64 of at least 16 bytes, checked by signing once. */
function checkSigningSecret(f: Fields, name: string, value: string): void {
  const why = 'must hold a Standard Webhooks secret: "whsec_" followed by the base64 of at least 16 random bytes';
  const b64 = value.slice('whsec_'.length);
  if (!value.startsWith('whsec_') || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0 || Buffer.from(b64, 'base64').length < 16) {
    throw new ConfigError(f.key(name), why);
  }
  try {
    new Webhook(value).sign('msg_check', new Date(0), '{}');
  } catch (err) {
    throw new ConfigError(f.key(name), `${why} (${(err as Error).message})`, { cause: err });
  }
}

function parseWebhook(f: Fields, baseDir: string): WebhookConfig {
  const urlText = f.string('url');
  let url: URL;
  try {
    url = new URL(urlText);
  } catch {
    throw new ConfigError(f.key('url'), `must be an absolute http(s) URL, got ${JSON.stringify(shownUrl(urlText))}`);
  }
  // A query string may hold a secret: `config` shows the URL with it redacted (the POST uses it whole).
  f.setEffective('url', shownUrl(url));
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(f.key('url'), 'must use https (http only for loopback tests)');
  }
  if (url.protocol === 'http:' && !isLoopbackLiteral(url.hostname.replace(/^\[|\]$/g, ''))) {
    throw new ConfigError(f.key('url'), 'plain http is allowed only to a loopback address; use https');
  }
  if (url.username || url.password) throw new ConfigError(f.key('url'), 'must not carry credentials; use bearer_file');
  const auth = f.oneOf<WebhookAuth>('auth', ['bearer', 'standard-webhooks', 'both'], 'standard-webhooks');
  const needBearer = auth !== 'standard-webhooks';
  const needSecret = auth !== 'bearer';
  if (needBearer && !f.has('bearer_file')) throw new ConfigError(f.key('bearer_file'), `is required when auth = "${auth}"`);
  if (needSecret && !f.has('secret_file')) throw new ConfigError(f.key('secret_file'), `is required when auth = "${auth}"`);
  const out: WebhookConfig = {
    url,
    auth,
    timeoutMs: f.integer('timeout_s', 10, 1, 300) * 1000,
    maxAttempts: f.integer('max_attempts', 8, 1, 100),
    maxAgeMs: f.integer('max_age_s', 3600, 1, 7 * 86400) * 1000,
    notifyCancel: f.boolean('notify_cancel', false),
    maxPerMinute: f.integer('max_per_minute', DEFAULT_WEBHOOKS_PER_MINUTE, 1, 10_000),
  };
  if (needBearer) out.bearer = secret(f, 'bearer_file', baseDir, { token: true });
  else f.optionalString('bearer_file');
  if (needSecret) {
    out.signingSecret = secret(f, 'secret_file', baseDir, { token: true });
    if (out.signingSecret !== '') checkSigningSecret(f, 'secret_file', out.signingSecret);
  } else f.optionalString('secret_file');
  f.rejectUnknown();
  return out;
}

/**
 * Two `[[agents]]` tables with the same `name`, or the same `tag` (compared lower-case; a tag left
 * out is the name upper-cased, as {@link parseAgent} makes it): an error for each later one,
 * naming the first. Read from the tables as written, not from the agents read, so a duplicate is
 * reported in the same run as the other errors of those tables (fresh-user trial: it came only
 * once they were fixed).
 */
export function duplicateAgents(tables: readonly Fields[]): ConfigError[] {
  const seen = new Map<string, string>();
  const found: ConfigError[] = [];
  for (const t of tables) {
    const name = t.peekString('name');
    const tag = t.peekString('tag') ?? name?.toUpperCase();
    for (const [what, value] of [['name', name], ['tag', tag?.toLowerCase()]] as const) {
      if (value === undefined) continue;
      const k = `${what}:${value}`;
      const first = seen.get(k);
      if (first !== undefined) found.push(new ConfigError(t.key(what), `${JSON.stringify(value)} is already used by ${first}`));
      else seen.set(k, t.prefix);
    }
  }
  return found;
}

export function parseAgent(f: Fields, baseDir: string): AgentConfig {
  const name = f.string('name');
  if (!NAME_RE.test(name)) throw new ConfigError(f.key('name'), 'must be lower-case letters, digits, "-" or "_" (it is a URL path segment)');
  const tag = f.string('tag', name.toUpperCase());
  if (!TAG_RE.test(tag)) throw new ConfigError(f.key('tag'), 'must be letters, digits, "-" or "_", at most 32');
  const address = f.string('address').toLowerCase();
  if (!ADDRESS_RE.test(address)) throw new ConfigError(f.key('address'), `must be a plain address like agent@example.com`);
  const dkimDomain = f.string('dkim_domain', address.slice(address.indexOf('@') + 1)).toLowerCase();
  if (!DOMAIN_RE.test(dkimDomain)) throw new ConfigError(f.key('dkim_domain'), 'must be a domain name such as example.com (no trailing dot)');
  const skills = f.tableArray('skills').map((s) => {
    const skill = {
      id: s.string('id'),
      name: s.string('name'),
      description: s.string('description', ''),
      tags: s.stringArray('tags', []),
    };
    s.rejectUnknown();
    return skill;
  });
  const agent: AgentConfig = {
    name,
    description: f.string('description', `Cloud agent ${name}, reached by webhook and answering by email`),
    tag,
    address,
    dkimDomain,
    deadlineMs: f.integer('deadline_s', 3600, ...DEADLINE_RANGE_S) * 1000,
    maxOpenTasks: f.integer('max_open_tasks', DEFAULT_MAX_OPEN_TASKS, 1, 100_000),
    untrustedLabel: f.string('untrusted_label', `[UNTRUSTED — ${name} reply, verify before acting]`),
    skills,
    webhook: parseWebhook(f.table_('webhook', true), baseDir),
  };
  f.rejectUnknown();
  return agent;
}

