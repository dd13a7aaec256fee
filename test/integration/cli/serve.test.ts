import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

/** Runs the CLI from source (tsx), as a child process, and returns its exit code and stderr. */
function cli(args: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
}

describe('a2a-mailbridge serve refuses unsafe settings', () => {
  it('a non-loopback listen address fails with the fix', () => {
    const c = makeConfigDir(minimalToml({ listen: '0.0.0.0:8765' }));
    const r = cli(['--config', c.configPath, 'serve']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'a2a-mailbridge: config key server.listen: "0.0.0.0" is not a loopback address; a2a-mailbridge listens on loopback only (127.0.0.0/8, ::1 or localhost). Use "127.0.0.1:8765"\n',
    );
  });

  it('a secret file of mode 0644 fails with the chmod to run', () => {
    const c = makeConfigDir(minimalToml());
    const secret = join(c.dir, 'webhook-secret');
    chmodSync(secret, 0o644);
    const r = cli(['--config', c.configPath, 'serve']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`secret file ${secret} has mode 0644, readable by others; run: chmod 600 ${secret}`);
  });

  it('a config file, or its folder, that others can write fails with the path and the chmod', () => {
    const c = makeConfigDir(minimalToml());
    chmodSync(c.configPath, 0o666);
    const file = cli(['--config', c.configPath, 'serve']);
    expect(file.status).toBe(2);
    expect(file.stderr).toBe(`a2a-mailbridge: config file: ${c.configPath} is writable by others (mode 0666), so they could redirect the bridge; run: chmod go-w ${c.configPath}\n`);
    chmodSync(c.configPath, 0o600);
    // The secrets here sit beside the config: the same folder, now writable by the group.
    chmodSync(c.dir, 0o770);
    const dir = cli(['--config', c.configPath, 'serve']);
    expect(dir.status).toBe(2);
    expect(dir.stderr).toContain(`${c.dir} is writable by others (mode 0770), so they could redirect the bridge; run: chmod go-w ${c.dir}`);
  });
});
