import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** Runs exitAfterWrite(text of `bytes` x's and a newline, 3) in a child whose stderr is a pipe; resolves with what the pipe delivered and the exit code. */
function run(bytes: number): Promise<{ status: number | null; stderr: string }> {
  const code = `import { exitAfterWrite } from './src/cli/exit-after-write.ts'; exitAfterWrite('x'.repeat(${bytes}) + '\\n', 3);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'ignore', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => err.push(c));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr: Buffer.concat(err).toString('utf8') }));
  });
}

describe('exitAfterWrite', () => {
  it('exits only once a message far larger than a pipe holds is written whole (attack review 2: cut at 131 KB)', async () => {
    const r = await run(4_000_000);
    expect(r.status).toBe(3);
    expect(r.stderr.length).toBe(4_000_001);
    expect(r.stderr.endsWith('x\n')).toBe(true);
  });
});
