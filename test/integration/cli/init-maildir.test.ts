import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../../src/cli/doctor.js';
import { runCli } from '../../helpers/cli.js';

/**
 * `init --maildir <path>` (fresh-user trial: switching init's IMAP config to a Maildir took five
 * hand edits): the config it writes reads that Maildir, names no IMAP password, and passes
 * doctor's config checks as written.
 */
const root = mkdtempSync(join(tmpdir(), 'mb-init-maildir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('init --maildir', () => {
  it('writes a Maildir config that passes doctor\'s config, secret and mailbox checks with no edit to [mailbox]', async () => {
    const maildir = join(root, 'Mail');
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
    const dir = join(root, 'cfg');
    const config = join(dir, 'config.toml');
    const r = await runCli(['init', '--dir', dir, '--maildir', maildir]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readdirSync(join(dir, 'secrets')).sort()).toEqual(['bearer', 'webhook-secret']);
    expect(r.stdout).not.toContain('imap-password');
    expect(r.stdout).not.toContain('not a Maildir yet');
    expect(r.stdout).toContain(`next: edit ${config}, set your address in [mailbox] and the agent in [[agents]], then run: a2a-mailbridge --config ${config} doctor`);
    // Only the webhook URL moves, to a closed loopback port: doctor then probes no outside host.
    const text = readFileSync(config, 'utf8');
    writeFileSync(config, text.replace(/^url = "https:\/\/hooks\.agent\.example\/trigger"$/m, 'url = "http://127.0.0.1:9/hook"'));

    const j = await runCli(['--config', config, 'doctor', '--json']);
    const report = JSON.parse(j.stdout) as DoctorReport;
    const status = Object.fromEntries(report.checks.map((c) => [c.name, c.status]));
    expect(status).toMatchObject({ 'config file': 'ok', 'secret server.bearer_file': 'ok', 'secret agents[0].webhook.secret_file': 'ok', config: 'ok', mailbox: 'ok' });
    expect(report.checks.find((c) => c.name === 'config')!.detail).toContain(`mailbox maildir ${maildir}`);
    expect(report.checks.filter((c) => c.name.startsWith('unused secret file'))).toEqual([]);
    expect(report.hermes).not.toBeNull();
  });

  it('a path that is no Maildir yet: written all the same, with a note giving the mkdir; a path starting with ~ is refused', async () => {
    const missing = join(root, 'not yet');
    const r = await runCli(['init', '--dir', join(root, 'cfg2'), '--maildir', missing]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`note: '${missing}' is not a Maildir yet (no cur/ and new/): point your mail sync at it, or make one: mkdir -p '${missing}/cur' '${missing}/new' '${missing}/tmp'`);
    expect(readFileSync(join(root, 'cfg2', 'config.toml'), 'utf8')).toContain(`path = "${missing}"`);

    const tilde = await runCli(['init', '--dir', join(root, 'cfg3'), '--maildir', '~/Mail']);
    expect(tilde.status).toBe(2);
    expect(tilde.stderr).toContain('--maildir "~/Mail": give the Maildir\'s full path');
    expect(existsSync(join(root, 'cfg3'))).toBe(false);
  });
});
