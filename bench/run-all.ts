/**
 * `npm run bench`: every benchmark, one after the other, each in a process of its own
 * (so none inherits another's heap, JIT state or children). Each writes its own section of
 * bench/RESULTS.md. Goals are reported in the tables, never asserted; the exit code is non-zero
 * only when a script failed to run.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESULTS_PATH } from './lib/results.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SCRIPTS = ['machine-limit', 'instructions', 'million', 'a2a-overhead', 'mailbox-check', 'maildir-check', 'maildir-junk', 'flood', 'gates', 'reply-parse', 'replay-store', 'arrival-latency', 'stream-latency', 'store-bounds', 'memory'];

const failed: string[] = [];
for (const name of SCRIPTS) {
  console.log(`\n=== bench/${name}.ts`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(HERE, `${name}.ts`)], { stdio: 'inherit' });
  if (r.status !== 0) failed.push(`${name} (${r.status ?? r.signal})`);
}
console.log(`\nResults: ${RESULTS_PATH}`);
if (failed.length) {
  console.error(`Failed: ${failed.join(', ')}`);
  process.exit(1);
}
