import { isIP } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { maxOf } from '../extremes.js';
import type { LogConfig } from '../log.js';
import { duplicateAgents, parseAgent } from './agents.js';
import type { ProviderProfile } from '../uplink/border.js';
import type { ProviderName } from '../uplink/providers.js';
import { readCheckedConfig, type ConfigReadHooks } from './config-file.js';
import { ConfigError, ConfigErrors, FILE_KEY, Fields, oneError, type Table } from './fields.js';
import { parseMailbox } from './mailbox-config.js';
import type { OAuth2Config } from './provider.js';
import { tomlSyntaxMessage } from './toml-syntax.js';
import { isLoopbackLiteral, secret } from './values.js';

export { ConfigError, ConfigErrors } from './fields.js';
export { isLoopbackLiteral } from './values.js';

export type WebhookAuth = 'bearer' | 'standard-webhooks' | 'both';

export interface WebhookConfig {
  url: URL;
  auth: WebhookAuth;
  /** Sent as `Authorization: Bearer <token>` when auth is bearer or both. */
  bearer?: string;
  /** `whsec_…` Standard Webhooks secret when auth is standard-webhooks or both. */
  signingSecret?: string;
  /** Per-attempt timeout for connect, headers and body, in ms. */
  timeoutMs: number;
  /** Attempts per dispatch before the task fails with `dispatch exhausted`. */
  maxAttempts: number;
  /** Age of a dispatch after which no further attempt is made, in ms. */
  maxAgeMs: number;
  /** Send the agent a best-effort notice (the envelope with `cancel: true`) when a task is canceled. */
  notifyCancel: boolean;
  /**
   * New dispatches (a new task, or the caller's answer to INPUT_REQUIRED: each wakes the agent)
   * accepted per rolling 60 s; more are refused with the `limitReached` error. Retries of a
   * dispatch do not count (max_attempts bounds them).
   */
  maxPerMinute: number;
}

export interface SkillConfig {
  id: string;
  name: string;
  description: string;
  tags: string[];
}

export interface AgentConfig {
  /** URL path segment: the agent lives at `/agents/<name>`. */
  name: string;
  description: string;
  /** Subject tag: replies carry `[<tag>:<task id>]`. */
  tag: string;
  /** The agent's From address, lower-cased. */
  address: string;
  /** The DKIM `d=` a reply must be signed with, lower-cased, exact (no relaxed subdomains). */
  dkimDomain: string;
  /** Default deadline of a turn, in ms from dispatch. */
  deadlineMs: number;
  /** Tasks of this agent that may be open (SUBMITTED, WORKING or INPUT_REQUIRED) at once; a new one beyond is refused. */
  maxOpenTasks: number;
  /** First line of every artifact built from this agent's mail. */
  untrustedLabel: string;
  skills: SkillConfig[];
  webhook: WebhookConfig;
}

export interface ImapConfig {
  host: string;
  port: number;
  tls: boolean;
  user: string;
  /** The password (auth = "password"); '' with OAuth2. */
  password: string;
  /** Set when `auth = "oauth2"`: the access token comes from this grant (src/uplink/oauth2.ts). */
  oauth2?: OAuth2Config;
  /** Connection, greeting and socket timeout, in ms. */
  timeoutMs: number;
}

export interface MailboxConfig {
  kind: 'imap' | 'maildir';
  /** The address replies go to (the envelope's `reply_to`), lower-cased. */
  address: string;
  /** IMAP folder name (kind imap; a Maildir has none, its folder is `maildirPath`). */
  folder?: string;
  imap?: ImapConfig;
  /** Maildir folder holding cur/ and new/ (kind maildir). */
  maildirPath?: string;
  /** A request-driven check runs when the last one is older than this, in ms. */
  checkIntervalMs: number;
  /** The longest an A2A call waits for a running check before it answers anyway, in ms. */
  checkWaitMs: number;
  /**
   * Whole messages read per check at most (the survivors of the header stage); the rest wait for
   * the next check, ahead of newer mail.
   */
  maxFetchPerCheck: number;
  /**
   * Candidates read per check at most by the first 16 KiB of their header block (IMAP: candidates
   * SEARCH listed; Maildir: files opened): mail refused there (on its header block when it ends
   * within them, else on the provider's stamp) costs nothing more, so a flood is worked through
   * here (docs/architecture.md, "The header stage").
   */
  maxPrefixesPerCheck: number;
  /**
   * Header blocks read per check at most beyond their first 16 KiB: those whose provider stamp
   * could not refuse them.
   */
  maxHeadersPerCheck: number;
  /** Messages over this size, in bytes, are refused with the verdict `too-large`. */
  maxMessageBytes: number;
  /**
   * A reply's attachment up to this size, in bytes, is shown inline (a file part, base64); a larger
   * one is refused with the reason shown, never cut (docs/agent-text.md, "Files and data").
   */
  maxAttachmentBytes: number;
  /** `mailbox.provider`: the preset (src/uplink/providers.ts); `fastmail` by default. */
  provider: ProviderName;
  /** How gate 5 recognises the provider's results and its border: the preset with any explicit patterns applied. */
  profile: ProviderProfile;
  /** authserv-ids whose Authentication-Results are trusted (anchored, case-insensitive); `profile.authservId`. */
  authservId: RegExp;
  /** Hosts of the provider's MX: the border is the topmost Received `by` such a host `from` an outside host; `profile.borderHost`. */
  borderHost: RegExp;
  /** Verify DKIM signatures locally with mailauth in addition to trusting the provider's results. */
  verifyDkim: boolean;
  /** A reply's Date may be this much before its turn's dispatch or after now, in ms (clock skew). */
  dateSkewMs: number;
  /** Watch the folder (IMAP IDLE, or fs.watch for a Maildir) and apply replies as they land. */
  watch: boolean;
  /** With `watch`: how often due webhook attempts, a due check and the sweep run without a call, in ms. */
  watchTickMs: number;
}

export interface ServerConfig {
  /** Shown to the agent as the envelope's `from`. */
  name: string;
  host: string;
  port: number;
  /** The facade's bearer token; callers send `Authorization: Bearer <token>`. */
  bearer: string;
  maxBodyBytes: number;
  /** Whole-text messages (trimmed, case-insensitive) that are polls, never new work. */
  pollWords: string[];
  /** The shortest read timeout among the callers, in ms: every answer must come well inside it. */
  callerTimeoutMs: number;
  /**
   * How long a blocking SendMessage (no `returnImmediately`) waits for the task to finish or ask
   * for input, watching the mailbox, before it answers with the current state, in ms. 0 = answer
   * once the first dispatch attempt has an outcome.
   */
  waitBudgetMs: number;
  /** Streams (SendStreamingMessage, SubscribeToTask) one caller may hold open at once; more are refused with `limitReached`. */
  maxStreamsPerCaller: number;
  /**
   * TCP connections the server holds at once, so descriptors stay for the store and the mailbox; at
   * the cap a new one evicts a waiting connection, and is closed at accept only when every one is
   * busy (src/a2a/connection-cap.ts).
   */
  maxConnections: number;
  /** A quiet stream gets an SSE comment line this often, in ms, so idle proxies and clients keep it. */
  streamKeepAliveMs: number;
  /**
   * Host names a push notification URL may name besides loopback (lower-cased, exact). Without
   * one, a push URL must name a loopback host and resolve to loopback addresses only.
   */
  pushAllowHosts: string[];
}

export interface Config {
  /** Absolute path of the file this was read from (empty for configs built in code). */
  file: string;
  log: LogConfig;
  server: ServerConfig;
  store: { path: string };
  mailbox: MailboxConfig;
  /** DNS servers for local DKIM key lookups (`ip` or `ip:port`); empty means the system resolver. */
  dnsServers: string[];
  agents: AgentConfig[];
}

export { FASTMAIL_HOST_PATTERN } from '../uplink/providers.js';


/**
 * `server.listen`: a loopback IP literal and a port. `localhost` is taken as 127.0.0.1, bound
 * literally: the name may resolve to ::1 first, or to something else on a machine whose hosts
 * file says so (bind 127.0.0.1 literally: `localhost` may resolve to ::1).
 */
function parseListen(f: Fields): { host: string; port: number } {
  const key = f.key('listen');
  const v = f.string('listen', '127.0.0.1:8765');
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(v);
  const written = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !written || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(key, `must be "<loopback ip>:<port>", e.g. "127.0.0.1:8765", got ${JSON.stringify(v)}`);
  }
  const host = written.toLowerCase() === 'localhost' ? '127.0.0.1' : written;
  if (!isLoopbackLiteral(host)) {
    throw new ConfigError(
      key,
      `${JSON.stringify(written)} is not a loopback address; a2a-mailbridge listens on loopback only (127.0.0.0/8, ::1 or localhost). Use "127.0.0.1:${port}"`,
    );
  }
  f.setEffective('listen', host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);
  return { host, port };
}

/** Options of the loader. */
export interface LoadOptions {
  /** An OAuth2 refresh token file may be missing (only `auth login`, which writes it). */
  allowMissingGrant?: boolean;
  /**
   * Read no secret file: every secret is '' and only its path is known. For the commands that need
   * paths and addresses only (`config`, `status`, the read commands), so they work before the
   * secrets are in place; `serve` and `doctor` read them all.
   */
  skipSecrets?: boolean;
  /** Test seam of the config file's read (config-file.ts, `readCheckedConfig`). */
  readHooks?: ConfigReadHooks;
}

/**
 * Validates a parsed TOML document. Relative paths (store, secret files, maildir) are resolved
 * against `baseDir`, normally the config file's folder. Secret files are read here, so an
 * unsafe secret stops start-up.
 *
 * @throws ConfigError naming the bad key and the fix; ConfigErrors when there are several (every
 *   unknown or misplaced key and every bad value, each table read even after a bad value in another).
 */
export function parseConfig(doc: Table, baseDir: string, file = '', o: LoadOptions = {}): Config {
  const root = new Fields('', doc, o.skipSecrets === true, undefined, file);
  try {
    const config = parseTables(root, baseDir, file, o);
    const found = oneError(root.problems);
    if (found) throw found;
    return config;
  } catch (err) {
    // The problems recorded before an error that stopped the whole reading (a check across tables) come with it.
    if (!(err instanceof ConfigError) || root.problems.length === 0 || root.problems.includes(err) || err instanceof ConfigErrors) throw err;
    throw oneError(root.problems, err)!;
  }
}

/**
 * The readers of {@link parseConfig}, table by table. A bad value ends the reading of its table
 * only (Fields.section): the next tables are read and their problems recorded too, and all of them
 * are thrown at once (at most fields.ts MAX_LISTED_KEY_ERRORS listed) before the checks across tables.
 */
function parseTables(root: Fields, baseDir: string, file: string, o: LoadOptions): Config {
  const serverConfig = root.section('server', (server): ServerConfig => {
    const { host, port } = parseListen(server);
    return {
      name: server.string('name', 'a2a-mailbridge'),
      host,
      port,
      bearer: secret(server, 'bearer_file', baseDir, { token: true }),
      maxBodyBytes: server.integer('max_body_bytes', 1024 * 1024, 1024, 16 * 1024 * 1024),
      pollWords: server.stringArray('poll_words', ['status', 'poll', 'check', '?', '']).map((w) => w.trim().toLowerCase()),
      callerTimeoutMs: server.integer('caller_timeout_s', 30, 5, 3600) * 1000,
      waitBudgetMs: server.integer('wait_budget_s', 0, 0, 3600) * 1000,
      maxStreamsPerCaller: server.integer('max_streams_per_caller', 16, 1, 10_000),
      maxConnections: server.integer('max_connections', 256, 2, 10_000),
      streamKeepAliveMs: server.integer('stream_keepalive_s', 15, 1, 300) * 1000,
      pushAllowHosts: server.stringArray('push_allow_hosts', []).map((h) => h.trim().toLowerCase()),
    };
  });

  const storePath = root.section('store', (store) => store.path('path', baseDir, 'mailbridge.sqlite'));

  // parseMailbox records [mailbox]'s own unknown keys, and reads [mailbox.<kind>] even when a value of [mailbox] is bad.
  const mailbox = root.collect(() => parseMailbox(root.table_('mailbox', true), baseDir, o));
  const log = root.section('log', (logTable): LogConfig => ({
    level: logTable.oneOf('level', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    ...(logTable.has('file') ? { file: logTable.path('file', baseDir) } : {}),
    maxBytes: logTable.integer('max_size_mb', 10, 1, 1024) * 1024 * 1024,
    maxFiles: logTable.integer('max_files', 5, 1, 100),
  }));

  const dnsServers = root.section('dns', (dns) => {
    const servers = dns.stringArray('servers', []);
    for (const [i, server] of servers.entries()) {
      const m = /^(?:\[([^\]]+)\]|([^:]+)|([0-9a-fA-F:]+))(?::(\d{1,5}))?$/.exec(server);
      const ip = m?.[1] ?? m?.[2] ?? m?.[3];
      const port = m?.[4] === undefined ? 53 : Number(m[4]);
      if (!m || !ip || !isIP(ip) || port < 1 || port > 65535) {
        throw new ConfigError(`dns.servers[${i}]`, `must be an IP address with an optional port ("9.9.9.9", "127.0.0.1:5353", "[::1]:53"), got ${JSON.stringify(server)}`);
      }
    }
    return servers;
  });

  // Each agent on its own: a bad value in one still lets the next ones be read.
  const agentTables = root.collect(() => root.tableArray('agents'));
  const read = (agentTables ?? []).map((a) => root.collect(() => a.readWhole((t) => parseAgent(t, baseDir))));
  // Across the tables as written: reported with the agents' other errors, not once they are fixed.
  const duplicates = duplicateAgents(agentTables ?? []);
  root.problems.push(...duplicates);
  root.rejectUnknown();
  const agents = read.filter((a) => a !== undefined);
  if (serverConfig === undefined || storePath === undefined || mailbox === undefined || log === undefined || dnsServers === undefined || agentTables === undefined || agents.length < read.length || duplicates.length > 0) {
    // Each of these recorded its error in root.problems.
    throw oneError(root.problems)!;
  }
  if (agents.length === 0) throw new ConfigError('agents', 'at least one [[agents]] table is required');
  // Every answer must come well inside the caller's timeout (docs/architecture.md, "The data path"):
  // the worst case is one webhook attempt, then the blocking wait, then one mailbox check wait.
  const slowestHook = maxOf(agents.map((a) => a.webhook.timeoutMs), Number.NEGATIVE_INFINITY);
  const worst = slowestHook + serverConfig.waitBudgetMs + mailbox.checkWaitMs;
  if (worst >= serverConfig.callerTimeoutMs) {
    throw new ConfigError(
      serverConfig.waitBudgetMs > 0 ? 'server.wait_budget_s' : 'server.caller_timeout_s',
      `the slowest answer (webhook timeout ${slowestHook / 1000} s + wait_budget_s ${serverConfig.waitBudgetMs / 1000} s + mailbox.check_wait_ms ${mailbox.checkWaitMs} ms) is not below server.caller_timeout_s (${serverConfig.callerTimeoutMs / 1000} s); raise caller_timeout_s (to what the caller waits), or lower wait_budget_s, the agents' webhook timeout_s or check_wait_ms`,
    );
  }
  const config: Config = { file, log, server: serverConfig, store: { path: storePath }, mailbox, dnsServers, agents };
  EFFECTIVE.set(config, root.effective);
  return config;
}

/** The value in effect of every key, by config (see {@link effectiveConfig}). */
const EFFECTIVE = new WeakMap<Config, Table>();

/**
 * Every key of the config as TOML would write it, with the defaults filled in: the values the
 * readers of {@link parseConfig} took (times in seconds, paths absolute, `listen` as bound).
 * Secrets appear only as their `*_file` paths. Undefined for a config not built by parseConfig.
 */
export function effectiveConfig(config: Config): Table | undefined {
  return EFFECTIVE.get(config);
}

/**
 * Reads and validates a TOML config file.
 * @throws ConfigError for a missing file, one that is not a regular file or is over 1 MiB, a file
 *   (or a folder above it or its symlink's target) that another user owns or others can write
 *   (config-file.ts, `configPlaceProblem`), a TOML syntax error (with line) or an invalid key.
 */
export function loadConfig(path: string, o: LoadOptions = {}): Config {
  const file = isAbsolute(path) ? path : resolve(path);
  // Whoever can write the config (or swap it, or a folder or link on its path) can point the
  // bridge at their own webhook or mailbox: refused like a secret others can read, and the file
  // read is the one checked.
  const text = readCheckedConfig(file, o.readHooks);
  let doc: Table;
  try {
    doc = parseToml(text);
  } catch (err) {
    throw new ConfigError(FILE_KEY, tomlSyntaxMessage(file, text, err), { cause: err });
  }
  return parseConfig(doc, dirname(file), file, o);
}
