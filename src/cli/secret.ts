import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fchmodSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { readCheckedConfig } from '../config/config-file.js';
import { ConfigError } from '../config/config.js';
import { commandLine, missingConfigFix, shellWord } from '../config/config-path.js';
import { tomlSyntaxMessage } from '../config/toml-syntax.js';
import { nearestKey } from '../config/fields.js';
import { isGenerated, secretKind, type SecretKind } from '../config/secret-kinds.js';
import { secretRefs, type Doc, type SecretRef } from './doctor.js';
import { CliFailure, UsageError } from './errors.js';
import { generateBearer, generateSigningSecret } from './init.js';
import { noAgentText } from './agent-name.js';

/** Short names of the secret kinds, as `secret new` takes them beside the config keys. */
const ALIASES: Record<string, SecretKind> = {
  bearer: 'bearer',
  'webhook-secret': 'signing-secret',
  'imap-password': 'imap-password',
  'webhook-bearer': 'webhook-bearer',
};

export interface SecretNewOptions {
  /** Replace an existing file. */
  force?: boolean;
  /** For `webhook-secret` / `webhook-bearer` with several agents: which one. */
  agent?: string;
}

/** How to add the key of a kind this config does not have: what the loader reads it under. */
const HOW_TO_ADD: Record<SecretKind, string> = {
  bearer: 'set server.bearer_file = "secrets/bearer" in [server]',
  'signing-secret': 'in the agent\'s [agents.webhook], set auth = "standard-webhooks" (or "both") and secret_file = "secrets/webhook-secret"',
  'imap-password': 'with kind = "imap" and auth = "password" (the default) in [mailbox.imap], set password_file = "secrets/imap-password"',
  'webhook-bearer': 'in the agent\'s [agents.webhook], set auth = "bearer" (or "both") and bearer_file = "secrets/webhook-bearer"',
};

/**
 * The choices an unknown or absent name is answered with: the names `secret new` generates for
 * this config (each alias of a generated kind that finds a file in it, then each such key), and
 * apart from them the secret files set by the user, each with how (the IMAP password and a
 * webhook trigger token are issued elsewhere: written into their file; an OAuth2 refresh token by
 * the command that writes it). Listing the latter as choices would offer names `secret new` refuses.
 */
function secretChoices(refs: readonly SecretRef[], configFile: string): string {
  const generated = refs.filter((r) => isGenerated(secretKind(r.key)));
  const aliases = Object.entries(ALIASES)
    .filter(([, kind]) => isGenerated(kind) && generated.some((r) => secretKind(r.key) === kind))
    .map(([alias]) => alias);
  const names = [...aliases, ...generated.map((r) => r.key)];
  const parts = [names.length > 0 ? `\`secret new\` generates: ${names.join(', ')}` : `\`secret new\` generates none of this config's secret files`];
  const byUser = refs.filter((r) => !isGenerated(secretKind(r.key)));
  if (byUser.length > 0) {
    const how = (r: SecretRef): string =>
      r.writtenBy !== undefined ? `${r.key} (set it with: ${commandLine(configFile, r.writtenBy)})` : `${r.key} (${r.what}: write it into ${r.path}, mode 0600)`;
    parts.push(`set by you, not generated: ${byUser.map(how).join(', ')}`);
  }
  return parts.join('; ');
}

/** The name of the agent a key such as `agents[0].webhook.secret_file` belongs to (its index when it has none); undefined for another key. */
function agentOfKey(agents: readonly Doc[], key: string): string | undefined {
  const i = /^agents\[(\d+)\]/.exec(key)?.[1];
  if (i === undefined) return undefined;
  const named = agents[Number(i)]?.name;
  return typeof named === 'string' ? named : `agents[${i}]`;
}

/**
 * Which secret file `name` means: a `*_file` key as doctor prints it, or an alias (`bearer`, `webhook-secret` [--agent]).
 * @throws UsageError for a name of none (with the nearest valid one, as a config key's typo is
 *   answered: config/fields.ts nearestKey), or an `--agent` no agent of the config is named
 */
function pick(refs: readonly SecretRef[], doc: Doc, name: string, agent: string | undefined, configFile: string): SecretRef {
  const usage = secretChoices(refs, configFile);
  const agents = Array.isArray(doc.agents) ? (doc.agents as Doc[]) : [];
  const names = agents.map((a) => a.name).filter((n): n is string => typeof n === 'string');
  if (agent !== undefined && !names.includes(agent)) {
    throw new UsageError(noAgentText(agent, names, configFile));
  }
  const exact = refs.find((r) => r.key === name);
  if (exact) return exact;
  const kind = ALIASES[name];
  if (!kind) {
    // The names this config has: the aliases of a kind it has a file of, and the keys.
    const valid = [...Object.keys(ALIASES).filter((a) => refs.some((r) => secretKind(r.key) === ALIASES[a])), ...refs.map((r) => r.key)];
    const near = nearestKey(name, valid);
    throw new UsageError(`secret new ${JSON.stringify(name)}: not a secret of this config${near === undefined ? '' : ` (did you mean "${near}"?)`}; ${usage}`);
  }
  const ofKind = refs.filter((r) => secretKind(r.key) === kind);
  const matching = ofKind.filter((r) => agent === undefined || agentOfKey(agents, r.key) === agent);
  if (matching.length === 1) return matching[0]!;
  if (matching.length === 0) {
    if (agent !== undefined && ofKind.length > 0) {
      throw new UsageError(`agent ${agent} has no ${name} file; the agents that have one: ${ofKind.map((r) => agentOfKey(agents, r.key)).join(', ')}; give one of them with --agent`);
    }
    throw new UsageError(`this config reads no ${name} file${agent !== undefined ? ` for agent ${agent}` : ''}; ${usage}; to add one, ${HOW_TO_ADD[kind]}`);
  }
  throw new UsageError(`several agents have a ${name} file (${matching.map((r) => r.key).join(', ')}); add --agent <name> or give the key`);
}

/**
 * Writes `content` to `path` with mode 0600: a new file exclusively (never through a symlink);
 * with `replace`, a temporary file beside it renamed over the old one, so a reader sees the old
 * secret or the new, never half of one.
 */
function writeSecretFile(path: string, content: string, replace: boolean): void {
  const target = replace ? join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`) : path;
  const fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, content);
  } catch (err) {
    closeSync(fd);
    rmSync(target, { force: true });
    throw err;
  }
  closeSync(fd);
  if (replace) renameSync(target, path);
}

/** What to do once the file holds a new secret, by kind. */
function nextStep(kind: SecretKind, ref: SecretRef, agentName: string | undefined, configFile: string): string {
  const restart = `then restart the bridge if it runs (it reads its secrets at start): ${commandLine(configFile, 'stop')}, then ${commandLine(configFile, 'serve')}`;
  if (kind === 'bearer') return `put its content into each caller's config (Hermes: a2a_agents.<name>.auth.token), ${restart}`;
  return `configure the same secret (the content of ${ref.path}) at the webhook of agent ${agentName ?? '?'}, ${restart}; \`${commandLine(configFile, 'doctor')}\` checks the file`;
}

/**
 * `a2a-mailbridge secret new <name> [--force] [--agent <a>]`: (re)generates one secret file the
 * config names — the facade's bearer (32 random bytes as hex) or an agent's Standard Webhooks
 * signing secret (`whsec_` + base64 of 32 random bytes) — with mode 0600, creating its folder
 * (0700) when missing. The config is read as TOML only, so this works while the secret it makes
 * is missing; its place is checked as `serve` checks it (a config another user could change
 * would choose where the secret goes). The secret is never printed. The IMAP password and a webhook trigger token are
 * issued elsewhere: for those it says how to write the file.
 *
 * @returns the exit code (0)
 * @throws UsageError for an unknown name; ConfigError for a config that does not parse or whose
 *   place another user could change;
 *   CliFailure when the file exists without `--force`, or the kind cannot be generated
 */
export function runSecretNew(configFile: string, name: string, o: SecretNewOptions): number {
  const file = isAbsolute(configFile) ? configFile : resolve(configFile);
  let text: string;
  try {
    // The read serve and doctor make: the config's place checked (owner, folders up to /, symlink
    // owners) and exactly the checked file read (src/config/config-file.ts), since what it names
    // decides where the new secret is written.
    text = readCheckedConfig(file);
  } catch (err) {
    // Its place unsafe, not a regular file, or too large: the loader's message says what to fix.
    const code = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    if (code === undefined) throw err;
    const fix = code === 'ENOENT' || code === 'ENOTDIR' ? `; ${missingConfigFix(file)}` : '';
    throw new CliFailure(`cannot read the config ${file}: ${code}${fix}`);
  }
  let doc: Doc;
  try {
    doc = parseToml(text);
  } catch (err) {
    throw new ConfigError('(syntax)', tomlSyntaxMessage(file, text, err), { cause: err });
  }
  const ref = pick(secretRefs(doc, dirname(file), file), doc, name, o.agent, file);
  const kind = secretKind(ref.key)!;
  if (!isGenerated(kind)) {
    // A file a command of ours writes (the OAuth2 refresh token: `auth login`) is set with that command, not by hand.
    const how = ref.writtenBy !== undefined ? `set it with: ${commandLine(file, ref.writtenBy)}` : `write it with mode 0600: umask 077 && printf '%s' '<secret>' > ${shellWord(ref.path)}`;
    throw new CliFailure(`${ref.key} holds ${ref.what}, which is issued elsewhere, not generated here; ${how}`);
  }
  let exists = true;
  try {
    lstatSync(ref.path);
  } catch {
    exists = false;
  }
  if (exists && !o.force) {
    throw new CliFailure(`${ref.path} (${ref.key}) exists; pass --force to replace it (whoever holds the old secret must then get the new one)`);
  }
  if (!existsSync(dirname(ref.path))) mkdirSync(dirname(ref.path), { recursive: true, mode: 0o700 });
  const secret = kind === 'bearer' ? generateBearer() : generateSigningSecret();
  writeSecretFile(ref.path, `${secret}\n`, exists);
  const agentLabel = agentOfKey(Array.isArray(doc.agents) ? (doc.agents as Doc[]) : [], ref.key);
  const what = kind === 'bearer' ? "the facade's bearer (32 random bytes, hex)" : 'a Standard Webhooks signing secret (whsec_ + base64 of 32 random bytes)';
  process.stdout.write(`${exists ? 'replaced' : 'wrote'} ${ref.path} (${ref.key}, mode 0600): ${what}, not shown here\nnext: ${nextStep(kind, ref, agentLabel, file)}\n`);
  return 0;
}
