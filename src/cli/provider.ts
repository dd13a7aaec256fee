/**
 * `a2a-mailbridge provider detect`: reads one mail the user received from outside — a
 * file, or read-only the newest message from a sender in the configured mailbox (IMAP EXAMINE and
 * BODY.PEEK, or a Maildir read without renaming) — and says which preset recognises its trusted
 * Authentication-Results, or prints the exact patterns for a self-hosted MTA, with what it found.
 */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/config.js';
import { configLines, detectProvider, type Detection } from '../uplink/detect.js';
import { newestImapMessageFrom, newestMaildirMessageFrom } from '../uplink/newest-from.js';
import { imapAuth } from '../uplink/oauth2.js';
import { PRESETS } from '../uplink/providers.js';
import { CliFailure, UsageError } from './errors.js';
import { asCliFailure } from './mailbox-fix.js';
import { clean, printJson } from './format.js';

export interface DetectOptions {
  file?: string;
  from?: string;
  json?: boolean;
}

/** The human report of a detection. */
export function formatDetection(d: Detection, source: string): string {
  const lines = [`a2a-mailbridge provider detect: ${source}`];
  if (d.preset) lines.push(`provider: ${d.preset} (${PRESETS[d.preset].label})`);
  else lines.push('provider: not recognised; no preset and no self-hosted pattern finds trusted results in this mail');
  if (d.border) lines.push(`  ${d.border}`);
  for (const n of d.notes) lines.push(`  ${n}`);
  if (d.preset) {
    lines.push('', 'Put this in the [mailbox] table of your config:', ...configLines(d).map((l) => `  ${l}`));
    if (d.preset === 'self-hosted') lines.push('  (the patterns match these exact host names; widen them if your MTA has several, e.g. mx[0-9]+\\.example\\.org)');
  }
  return lines.map(clean).join('\n');
}

async function readSource(configFile: string, o: DetectOptions): Promise<{ raw: Buffer; source: string }> {
  if (o.file !== undefined) {
    try {
      return { raw: readFileSync(o.file), source: o.file };
    } catch (err) {
      throw new CliFailure(`cannot read ${o.file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
  }
  const address = o.from!.toLowerCase();
  const config = loadConfig(configFile);
  const m = config.mailbox;
  let raw: Buffer | null;
  try {
    raw =
      m.kind === 'imap'
        ? await newestImapMessageFrom({ ...m.imap!, folder: m.folder! }, await imapAuth(m.imap!), address)
        : newestMaildirMessageFrom(m.maildirPath!, address);
  } catch (err) {
    throw asCliFailure(err, m);
  }
  const where = m.kind === 'imap' ? `${m.imap!.host} ${m.folder}` : m.maildirPath!;
  if (!raw) throw new CliFailure(`no message from ${address} in ${where}; send yourself a mail from that address, or pass --file <eml>`);
  return { raw, source: `newest message from ${address} in ${where}` };
}

/**
 * @returns 0 when a preset or self-hosted patterns were found, else 1
 * @throws UsageError without exactly one of --file and --from; CliFailure when the mail cannot be read
 *   (the mailbox's failure and its fix in one line)
 */
export async function runProviderDetect(configFile: string, o: DetectOptions): Promise<number> {
  if ((o.file === undefined) === (o.from === undefined)) throw new UsageError('give exactly one of --file <eml> and --from <address>');
  const { raw, source } = await readSource(configFile, o);
  const d = detectProvider(raw);
  if (o.json) printJson({ source, ...d, config: configLines(d) });
  else process.stdout.write(`${formatDetection(d, source)}\n`);
  return d.preset ? 0 : 1;
}
