/**
 * `doctor`'s look at the agent's most recent tagged mail (issue 13): the same gate-5 analysis as
 * `provider detect`, and whether the mail would pass gates 3–7 with the configured provider —
 * and, when not, why and what to change. Reads the store read-only; looks DKIM keys up in DNS.
 */
import { existsSync } from 'node:fs';
import type { Config } from '../config/config.js';
import { openDb } from '../store/db.js';
import { rawOf } from '../store/ledger.js';
import { configLines, detectProvider } from '../uplink/detect.js';
import { makeResolver, type DnsResolver } from '../uplink/dkim.js';
import { authenticate, identify, messageFacts } from '../uplink/gates.js';
import type { Check } from './doctor.js';

/**
 * @param resolver DNS for the DKIM key lookups (default: `[dns] servers`, else the system's)
 * @returns `fail` when the latest tagged mail would be refused at gates 3–7, else `ok` (also when there is none yet)
 */
export async function checkLatestTaggedMail(config: Config, resolver?: DnsResolver): Promise<Check> {
  const name = 'latest agent mail';
  const path = config.store.path;
  if (!existsSync(path)) return { name, status: 'ok', detail: 'no store yet; once the agent has replied, doctor judges its latest mail here' };
  let row: { id: number; verdict: string; receivedAt: number | null } | undefined;
  let raw: Buffer | null = null;
  const db = openDb(path, { readOnly: true });
  try {
    row = db.prepare(`SELECT id, verdict, received_at AS receivedAt FROM ledger WHERE task_id IS NOT NULL AND raw IS NOT NULL ORDER BY id DESC LIMIT 1`).get() as typeof row;
    if (row) raw = rawOf(db, row.id);
  } finally {
    db.close();
  }
  if (!row || !raw) return { name, status: 'ok', detail: 'no tagged mail from an agent in the ledger yet; once the agent has replied, doctor judges its latest mail here' };
  const facts = messageFacts(raw);
  const identified = identify(facts, config.agents, () => false);
  const what = `ledger #${row.id} (${row.verdict})`;
  if (!('taskId' in identified)) return { name, status: 'skip', detail: `${what}: ${identified.reason}`, fix: 'no configured agent tag in it' };
  const refusal = await authenticate(raw, identified, {
    profile: config.mailbox.profile,
    verifyDkim: config.mailbox.verifyDkim,
    resolver: resolver ?? makeResolver(config.dnsServers),
    receivedAt: row.receivedAt,
  });
  if (!refusal) return { name, status: 'ok', detail: `${what} passes gates 3–7 with provider ${config.mailbox.provider}` };
  const d = detectProvider(raw);
  const lines = configLines(d);
  const gate5 = /^gate 5/.test(refusal.reason);
  const fix =
    d.preset && (d.preset !== config.mailbox.provider || d.preset === 'self-hosted') && gate5
      ? `this mail is stamped like ${d.preset}: set in [mailbox] ${lines.join(', ')} (a2a-mailbridge provider detect --from ${identified.agent.address} explains)`
      : gate5
        ? `run a2a-mailbridge provider detect --from ${identified.agent.address} to see what your provider stamps`
        : `the provider's stamp was read; the refusal is about the mail itself (${refusal.verdict}): check agents.dkim_domain and the agent's DKIM signing`;
  return { name, status: 'fail', detail: `${what} would be refused: ${refusal.reason}`, fix };
}
