/**
 * Secret files the config does not use, for `doctor`: warnings, never failures, since the bridge
 * runs without them. Two kinds:
 *
 * - a `*_file` key the loader accepts but does not read under the other settings: an agent's
 *   `webhook.bearer_file` with `auth = "standard-webhooks"`, its `webhook.secret_file` with
 *   `auth = "bearer"` (src/config/agents.ts). Every other key the settings exclude is refused by
 *   the loader itself (`[mailbox.imap]` with a Maildir, `password_file` with OAuth2);
 * - a file holding a placeholder (`init`'s or secrets.example's) that no key names, in `init`'s
 *   `secrets/` folder or a folder the config's secret files are in: the IMAP password file left
 *   after a switch to a Maildir, the webhook bearer file of an agent that only signs.
 *
 * A file is read only to look for the placeholder ({@link fileHoldsPlaceholder}); nothing of it is
 * printed. A file holding a real secret that no key names is not reported: it is not init's.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { shellLine } from '../config/config-path.js';
import { fileHoldsPlaceholder } from '../config/secret-file.js';
import { EXAMPLE_SECRET_FILES } from '../config/secret-kinds.js';
import type { Check, Doc, SecretRef } from './doctor.js';

const table = (v: unknown): Doc => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Doc) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** One webhook key present in the document that its agent's `auth` does not read. */
interface UnusedKey {
  key: string;
  path: string;
  detail: string;
  fix: string;
}

function unusedWebhookKeys(doc: Doc, baseDir: string, configFile: string): UnusedKey[] {
  const out: UnusedKey[] = [];
  const agents = Array.isArray(doc.agents) ? doc.agents : [];
  agents.forEach((a, i) => {
    const hook = table(table(a).webhook);
    const auth = str(hook.auth) ?? 'standard-webhooks';
    const authKey = `agents[${i}].webhook.auth`;
    const add = (name: 'bearer_file' | 'secret_file', unusedBy: string, what: string, gain: string): void => {
      const p = str(hook[name]);
      if (p === undefined || auth !== unusedBy) return;
      const key = `agents[${i}].webhook.${name}`;
      out.push({
        key,
        path: resolve(baseDir, p),
        detail: `${authKey} = "${auth}" ${what}`,
        fix: `remove ${key} from ${configFile}, or set ${authKey} = "both" to ${gain} as well`,
      });
    };
    add('bearer_file', 'standard-webhooks', 'sends no bearer', 'send the bearer');
    add('secret_file', 'bearer', 'signs nothing', 'sign the webhooks');
  });
  return out;
}

/** Why the config reads no file of this example name (after "; "), or '' when it cannot tell. */
function whyUnread(doc: Doc, name: string): string {
  const mailbox = table(doc.mailbox);
  if (name === 'imap-password') {
    if ((str(mailbox.kind) ?? 'imap') === 'maildir') return '; mailbox.kind = "maildir" reads no IMAP password';
    if (str(table(mailbox.imap).auth) === 'oauth2') return '; mailbox.imap.auth = "oauth2" reads no IMAP password';
  }
  if (name === 'webhook-bearer') {
    const agents = Array.isArray(doc.agents) ? doc.agents : [];
    const sendsBearer = agents.some((a) => ['bearer', 'both'].includes(str(table(table(a).webhook).auth) ?? 'standard-webhooks'));
    if (!sendsBearer) return `; no agent's webhook has auth = "bearer" or "both"`;
  }
  return '';
}

/**
 * The warnings for the secret files of the document at `configFile` that the config does not
 * use; `used` are the files the loader reads (`secretRefs`). Never throws on a folder or file it
 * cannot read: it is passed over.
 */
export function unusedSecretChecks(doc: Doc, configFile: string, used: readonly SecretRef[]): Check[] {
  const baseDir = dirname(configFile);
  const keys = unusedWebhookKeys(doc, baseDir, configFile);
  const checks: Check[] = keys.map((u) => ({
    name: `secret ${u.key}`,
    status: 'warn',
    detail: `${u.path} is not read: ${u.detail}${fileHoldsPlaceholder(u.path) ? ' (the file still holds a placeholder)' : ''}`,
    fix: u.fix,
  }));
  const named = new Set([resolve(configFile), ...used.map((r) => r.path), ...keys.map((u) => u.path)]);
  const folders = [...new Set([join(baseDir, 'secrets'), ...used.map((r) => dirname(r.path))])];
  const agentCount = Array.isArray(doc.agents) ? doc.agents.length : 0;
  for (const folder of folders) {
    let names: string[];
    try {
      names = readdirSync(folder).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const path = join(folder, name);
      if (named.has(path)) continue;
      named.add(path);
      try {
        if (!lstatSync(path).isFile()) continue;
      } catch {
        continue;
      }
      if (!fileHoldsPlaceholder(path)) continue;
      const exampleKey = EXAMPLE_SECRET_FILES[basename(path)]?.replace('<i>', agentCount === 1 ? '0' : '<i>');
      const forKey = exampleKey ? ` (the example config names it in ${exampleKey}${whyUnread(doc, name)})` : '';
      checks.push({
        name: 'unused secret file',
        status: 'warn',
        detail: `${path} holds a placeholder and no key of the config names it${forKey}`,
        fix: `delete it (${shellLine('rm', path)})${exampleKey ? `, or write the real secret into it and name it in ${exampleKey}` : ''}`,
      });
    }
  }
  return checks;
}
