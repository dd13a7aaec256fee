import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, fchmodSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { readCheckedConfig } from '../config/config-file.js';
import { ConfigError } from '../config/config.js';
import { commandLine, missingConfigFix, shellWord } from '../config/config-path.js';
import { tomlSyntaxMessage } from '../config/toml-syntax.js';
import { isGenerated, secretKind, type SecretKind } from '../config/secret-kinds.js';
import { secretRefs, type Doc, type SecretRef } from './doctor.js';
import { CliFailure, UsageError } from './errors.js';
import { generateBearer, generateSigningSecret } from './init.js';

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

/** Which secret file `name` means: a `*_file` key as doctor prints it, or an alias (`bearer`, `webhook-secret` [--agent]). */
function pick(refs: readonly SecretRef[], doc: Doc, name: string, agent: string | undefined, configFile: string): SecretRef {
  const usage = secretChoices(refs, configFile);
  const exact = refs.find((r) => r.key === name);
  if (exact) return exact;
  const kind = ALIASES[name];
  if (!kind) throw new UsageError(`secret new ${JSON.stringify(name)}: not a secret of this config; ${usage}`);
  const agents = Array.isArray(doc.agents) ? (doc.agents as Doc[]) : [];
  const ofKind = refs.filter((r) => secretKind(r.key) === kind);
  const matching = ofKind.filter((r) => {
    if (agent === undefined) return true;
    const i = /^agents\[(\d+)\]/.exec(r.key)?.[1];
    return i !== undefined && agents[Number(i)]?.name === agent;
  });
  if (matching.length === 1) return matching[0]!;
  if (matching.length === 0) {
    if (agent !== undefined && ofKind.length > 0) {
      throw new UsageError(`no agent named ${agent} has a ${name} file (${ofKind.map((r) => r.key).join(', ')} do); give one of their names with --agent`);
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
    throw new CliFailure(
      `${ref.key} holds ${ref.what}, which is issued elsewhere, not generated here; write it with mode 0600: umask 077 && printf '%s' '<secret>' > ${shellWord(ref.path)}`,
    );
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
  const agents = Array.isArray(doc.agents) ? (doc.agents as Doc[]) : [];
  const agentName = /^agents\[(\d+)\]/.exec(ref.key)?.[1];
  const named = agentName === undefined ? undefined : agents[Number(agentName)]?.name;
  const agentLabel = typeof named === 'string' ? named : agentName === undefined ? undefined : `agents[${agentName}]`;
  const what = kind === 'bearer' ? "the facade's bearer (32 random bytes, hex)" : 'a Standard Webhooks signing secret (whsec_ + base64 of 32 random bytes)';
  process.stdout.write(`${exists ? 'replaced' : 'wrote'} ${ref.path} (${ref.key}, mode 0600): ${what}, not shown here\nnext: ${nextStep(kind, ref, agentLabel, file)}\n`);
  return 0;
}
