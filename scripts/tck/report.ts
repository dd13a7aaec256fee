/**
 * The Markdown report of scripts/conformance-tck.ts: each mode's outcome, the counts, the evidence
 * the adapter saw, and the versions of the Debian packages the kit ran with.
 */
import { spawnSync } from 'node:child_process';
import type { AdapterHit } from './adapter.js';
import type { TestResult } from './junit.js';
import { type Mode, type Options, REPO } from './options.js';

/** The Debian packages scripts/install-tck-deps.sh installs; their versions go into the report. */
const DEBIAN_PACKAGES = [
  'python3',
  'python3-pytest',
  'python3-pytest-asyncio',
  'python3-httpx',
  'python3-requests',
  'python3-responses',
  'python3-deepdiff',
  'python3-jsonschema',
  'python3-packaging',
  'python3-yaml',
  'python3-dotenv',
  'python3-grpcio',
  'python3-protobuf',
  'python3-openssl',
];

export interface ModeResult {
  mode: Mode;
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  results: TestResult[] | null;
  outputFile: string;
  bridgeLog: string;
  tasksByState: Record<string, number>;
  ledger: Record<string, number>;
  webhooks: number;
  replies: number;
  adapterHits: AdapterHit[];
  injectedAuth: number;
}

function debianVersions(): string[] {
  const r = spawnSync('dpkg-query', ['-W', '-f', '${Package} ${Version} ${db:Status-Abbrev}\n', ...DEBIAN_PACKAGES], { encoding: 'utf8' });
  const lines = r.stdout.split('\n').filter(Boolean);
  return DEBIAN_PACKAGES.map((p) => {
    const l = lines.find((x) => x.startsWith(`${p} `));
    return l && /\sii\s*$/.test(l) ? `${p} ${l.split(' ')[1]}` : `${p} (not installed)`;
  });
}

export function counts(results: TestResult[]): Record<TestResult['outcome'] | 'total', number> {
  const c = { total: results.length, passed: 0, failed: 0, error: 0, skipped: 0 };
  for (const r of results) c[r.outcome]++;
  return c;
}

function oneLine(s: string, max = 220): string {
  const t = s.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

export function report(o: Options, modes: ModeResult[], started: Date): string {
  const py = spawnSync(o.python, ['--version'], { encoding: 'utf8' });
  const head = spawnSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const dirty = spawnSync('git', ['-C', REPO, 'status', '--porcelain', '--', 'src'], { encoding: 'utf8' }).stdout.trim() !== '';
  const L: string[] = [];
  L.push('# a2a-tck v0.3 mandatory suite against a2a-mailbridge');
  L.push('');
  L.push(`Written by \`scripts/conformance-tck.ts\` on ${started.toISOString()}. Bridge: a2a-mailbridge ${head}${dirty ? ' (with uncommitted changes under src/)' : ''}, configured like \`npm run demo\` with \`mailbox.watch = true\`; simulated cloud agent replying after ${o.replyDelayMs} ms.`);
  L.push(`Kit: a2aproject/a2a-tck at \`${o.tckRev}\` (work tree ${o.tck}), run with ${(py.stdout || py.stderr).trim()} (\`${o.python}\`) and Debian's packages:`);
  L.push('');
  for (const v of debianVersions()) L.push(`- ${v}`);
  L.push('');
  L.push('Not in Debian bookworm (and not needed for a JSON-RPC-only SUT): `googleapis-common-protos` (the kit\'s gRPC stubs import `google.api.*`; with Debian\'s protobuf 3.21 they need protobuf ≥ 5.26 anyway), `pytest-json-report` (only `--compliance-report`), `pytest-html` (only `--report`), `types-requests` (type stubs). `grpcio-tools` is only for regenerating stubs. Per-test results are read from pytest\'s built-in `--junitxml` instead of `pytest-json-report`.');
  L.push('');
  L.push('## Summary');
  L.push('');
  L.push('| mode | total | passed | failed | errors | skipped | kit exit |');
  L.push('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const m of modes) {
    const c = m.results ? counts(m.results) : undefined;
    L.push(`| ${m.mode} | ${c?.total ?? '–'} | ${c?.passed ?? '–'} | ${c?.failed ?? '–'} | ${c?.error ?? '–'} | ${c?.skipped ?? '–'} | ${m.timedOut ? 'timed out' : String(m.exitCode)} |`);
  }
  L.push('');
  L.push('- **as-is**: the kit talks to the bridge directly. The v0.3 kit sends no Authorization header (its A2A_AUTH_* support, ADR-001, exists only from the v1.0 line on) and reads the v1.0 card the bridge serves at `/.well-known/agent-card.json`.');
  L.push('- **adapted**: the kit talks to a loopback adapter that adds the bridge bearer to requests without an Authorization header and serves the bridge\'s own v0.3 card (from `/.well-known/agent.json`) at `/.well-known/agent-card.json`; everything else is forwarded unchanged.');
  for (const m of modes) {
    L.push('');
    L.push(`## ${m.mode}`);
    L.push('');
    L.push('```');
    L.push(m.command);
    L.push('```');
    L.push('');
    L.push(`Bridge afterwards: tasks by state ${JSON.stringify(m.tasksByState)}; ledger verdicts ${JSON.stringify(m.ledger)}; webhooks received by the agent ${m.webhooks}, replies mailed ${m.replies}.`);
    if (m.mode === 'adapted') {
      const rpc = m.adapterHits.filter((h) => h.method === 'POST');
      L.push(`Adapter: ${m.adapterHits.length} requests (${rpc.length} POST), bearer added to ${m.injectedAuth}.`);
    }
    L.push('');
    if (!m.results) {
      L.push(`No JUnit XML was written; see the kit output (${m.outputFile}).`);
      continue;
    }
    L.push('| test | outcome | message |');
    L.push('| --- | --- | --- |');
    for (const r of m.results) L.push(`| \`${r.id}\` | ${r.outcome} | ${r.outcome === 'passed' ? '' : oneLine(r.message)} |`);
  }
  L.push('');
  L.push(`Raw outputs were kept outside the repo in ${o.artifacts} (kit output, JUnit XML and bridge log per mode).`);
  L.push('');
  return L.join('\n');
}
