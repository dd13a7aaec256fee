/**
 * The content corpus (test/fixtures/content/, written by generate-content-corpus.ts): genuine,
 * DKIM-signed replies whose content tries to pass for something else, and replies with files and
 * data. Each is taken in by the code a mailbox check runs (`intake`: every gate, then the writes)
 * against a real store holding the attack corpus's tasks, then viewed (src/core/task-view.ts) and
 * rendered in both A2A dialects. For each message the test shows (docs/agent-text.md):
 *
 * - the agent's text is in fenced parts only, with the manifest's body exactly (cleaned, imitating
 *   lines neutralised), one fence pair per part, the reply's nonce in the metadata, the counts of
 *   what was changed;
 * - no bridge part holds any of the attack (nor the Message-ID, Subject or From of the mail), and
 *   neither do the task's recorded causes;
 * - what Hermes prints holds none of the attack outside a fence;
 * - no removed character is anywhere in the output;
 * - each attachment is the file, data part or refusal the manifest says, in both dialects.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { v1Task, type V1Part } from '../../../src/a2a/wire.js';
import { v03Task } from '../../../src/a2a/wire-v03.js';
import { parseConfig } from '../../../src/config/config.js';
import { viewTask } from '../../../src/core/task-view.js';
import { noChanges } from '../../../src/core/untrusted-text.js';
import { messageFacts } from '../../../src/uplink/gates.js';
import type { ContentCorpusManifest, ContentCorpusMessage } from '../../fixtures/generate-content-corpus.js';
import { fenceOf, hermesPrints, jsonStrings as strings } from '../../helpers/agent-text.js';
import { corpusAgent, FIXTURES_DIR, loadManifest, loadZone, profileOf, zoneResolver } from '../../helpers/corpus.js';
import { corpusStore } from '../../helpers/corpus-store.js';

const CONTENT_DIR = join(FIXTURES_DIR, 'content');
const attack = loadManifest();
const content = JSON.parse(readFileSync(join(CONTENT_DIR, 'manifest.json'), 'utf8')) as ContentCorpusManifest;
const agent = corpusAgent(attack);
const setting = { agents: [agent], profile: profileOf(attack), resolver: zoneResolver(loadZone().records), maxAttachmentBytes: content.maxAttachmentBytes };
const judgedAt = Date.parse(attack.judgedAt);
/** The views read the poll words and the mailbox settings of a real config (no secret is read). */
const config = parseConfig(
  parseToml(`
[server]
bearer_file = "bearer"
[mailbox]
kind = "maildir"
address = "${attack.mailbox}"
[mailbox.maildir]
path = "mail"
[[agents]]
name = "${agent.name}"
address = "${agent.address}"
untrusted_label = "${agent.untrustedLabel}"
[agents.webhook]
url = "https://hooks.agent.example/grok"
auth = "bearer"
bearer_file = "hook"
`),
  '/nonexistent',
  '',
  { skipSecrets: true },
);

type Part = { text?: string; metadata?: Record<string, unknown> };

/** `text` with every fenced block (start line to its end line) taken out. */
function outsideFences(text: string): string {
  return text.replace(/^.* BEGIN-AGENT-TEXT ([0-9a-f]{16})\n[^]*?\nEND-AGENT-TEXT \1$/gm, '⟦fenced⟧');
}

const checked = { messages: 0, agentParts: 0, bridgeParts: 0, hostile: 0, attachments: 0 };
afterAll(() => console.log(`content corpus: ${checked.messages} messages; ${checked.agentParts} agent text parts fenced, ${checked.bridgeParts} bridge parts free of ${checked.hostile} attack strings, ${checked.attachments} attachments as expected`));

function checkDialect(m: ContentCorpusMessage, all: { where: string; part: Part }[], mail: { messageId: string; subject: string; from: string }, ledgerId: number): string {
  const e = m.expect;
  const agentText = all.filter((p) => p.part.metadata?.untrusted === true && typeof p.part.text === 'string');
  const bridge = all.filter((p) => p.part.metadata?.source === 'bridge');
  expect(agentText.length, 'the reply is shown fenced').toBeGreaterThan(0);
  const nonces = new Set<string>();
  for (const { where, part } of agentText) {
    const f = fenceOf(part.text!);
    expect(f.label, where).toBe(agent.untrustedLabel);
    expect(part.metadata!.fence, where).toBe(f.nonce);
    expect(part.metadata, where).toMatchObject({ untrusted: true, source: 'agent', agent: 'grok', ledgerId });
    // A progress note is shown in the status message from its start; the whole note is in the history.
    expect(f.body, where).toBe(e.body);
    expect(part.metadata!.changes, where).toEqual({ ...noChanges(), ...e.changes });
    nonces.add(f.nonce);
    checked.agentParts++;
  }
  expect(nonces.size, 'one nonce per reply, wherever it is shown').toBe(1);
  const attackStrings = [...e.hostile, mail.messageId, mail.subject, mail.from, ...e.body.split('\n').filter((l) => l.length > 12)];
  for (const { where, part } of bridge) {
    for (const h of attackStrings) expect(part.text ?? '', `${where} holds ${JSON.stringify(h)}`).not.toContain(h);
    checked.bridgeParts++;
  }
  checked.hostile += attackStrings.length;
  return [...nonces][0]!;
}

describe('content corpus: agent text stays inside its fence; the bridge’s sentences hold none of it', () => {
  it('has the injection shapes and the attachment shapes of issues 14 and 15', () => {
    expect(content.messages.length).toBeGreaterThanOrEqual(14);
  });

  for (const m of content.messages) {
    it(`${m.file}: ${m.description}`, async () => {
      const raw = readFileSync(join(CONTENT_DIR, m.file));
      const cs = corpusStore(attack, setting, m.task);
      try {
        const out = await cs.take(raw);
        expect(out.kind === 'recorded' ? [out.verdict, out.reason] : out).toEqual([m.expect.verdict, expect.any(String)]);
        const ledgerId = cs.store.ledger.ofTask(attack.liveTaskId).at(-1)!.id;
        const task = cs.store.tasks.get(attack.liveTaskId)!;
        const view = viewTask({ store: cs.store, config, now: () => judgedAt, mailbox: { folder: 'INBOX' } }, agent, task);
        const facts = messageFacts(raw, raw.length);
        const mail = { messageId: facts.messageId ?? '', subject: facts.subject ?? '', from: facts.from ?? '' };
        expect(mail.messageId).not.toBe('');

        // v1.0
        const v1 = v1Task(view);
        const v1Parts = [
          ...(v1.status.message?.parts ?? []).map((part, i) => ({ where: `status.message.parts[${i}]`, part })),
          ...(v1.artifacts ?? []).flatMap((a) => a.parts.map((part, i) => ({ where: `artifact ${a.artifactId} parts[${i}]`, part }))),
          ...v1.history.flatMap((h) => h.parts.map((part, i) => ({ where: `history ${h.messageId} parts[${i}]`, part }))),
        ];
        const nonce = checkDialect(m, v1Parts, mail, ledgerId);
        // v0.3: the same parts, the same fence.
        const v03 = v03Task(view);
        const v03Parts = [
          ...(v03.status.message?.parts ?? []).map((part, i) => ({ where: `v0.3 status.message.parts[${i}]`, part })),
          ...v03.artifacts.flatMap((a) => a.parts.map((part, i) => ({ where: `v0.3 artifact ${a.artifactId} parts[${i}]`, part }))),
          ...v03.history.flatMap((h) => h.parts.map((part, i) => ({ where: `v0.3 history ${h.messageId} parts[${i}]`, part }))),
        ];
        expect(checkDialect(m, v03Parts as { where: string; part: Part }[], mail, ledgerId)).toBe(nonce);

        // Where the agent's text is shown.
        const kind = m.expect.verdict;
        const at = (p: { where: string }): string => p.where.replace(/ parts\[\d+\]$/, '').replace(/parts\[\d+\]$/, '');
        const agentWhere = v1Parts.filter((p) => p.part.metadata?.untrusted === true && p.part.text !== undefined).map(at);
        const expectedWhere = {
          'applied:done': [`artifact reply-${ledgerId}`, `history reply-${ledgerId}`],
          'applied:failed': [`artifact reply-${ledgerId}`, `history reply-${ledgerId}`],
          'late:recorded': [`artifact late-reply-${ledgerId}`, `history reply-${ledgerId}`],
          'applied:input-required': ['status.message.', `history reply-${ledgerId}`],
          'applied:working': ['status.message.', `history reply-${ledgerId}`],
        }[kind];
        expect(agentWhere).toEqual(expectedWhere);

        // What Hermes prints: the attack only inside fences.
        const printed = hermesPrints('grok', v1);
        for (const h of [...m.expect.hostile, mail.messageId, mail.subject]) expect(outsideFences(printed), `Hermes prints ${JSON.stringify(h)} outside a fence`).not.toContain(h);
        expect(printed).toContain(`BEGIN-AGENT-TEXT ${nonce}\n${m.expect.body}\nEND-AGENT-TEXT ${nonce}`);

        // Nothing removed survives anywhere, and no recorded cause quotes the mail.
        const everything = [...strings(v1), ...strings(v03)];
        for (const a of m.expect.absent) expect(everything.some((s) => s.includes(a)), `${JSON.stringify(a)} survived`).toBe(false);
        const causes = [task.stateReason ?? '', ...cs.store.events.of(task.id).map((ev) => ev.cause)];
        for (const c of causes) for (const h of [mail.messageId, ...m.expect.hostile]) expect(c).not.toContain(h);

        // Attachments: in their artifact (a reply that finished the task or came late) or after the reply's history message.
        const expected = m.expect.attachments ?? [];
        const finished = kind === 'applied:done' || kind === 'applied:failed' || kind === 'late:recorded';
        const holder = finished
          ? (v1.artifacts ?? []).find((a) => a.artifactId === `attachments-${ledgerId}`)?.parts
          : v1.history.find((h) => h.messageId === `reply-${ledgerId}`)?.parts.filter((p) => p.metadata?.attachment !== undefined);
        if (expected.length === 0) {
          expect(holder ?? []).toEqual([]);
        } else {
          const parts = [...(holder ?? [])] as V1Part[];
          for (const [i, x] of expected.entries()) {
            if (x.note !== undefined) {
              const note = parts.shift()!;
              expect(note.metadata).toMatchObject({ untrusted: false, source: 'bridge', ledgerId, attachment: i + 1, ...(x.kind === 'refused' ? { refused: true } : {}) });
              expect('text' in note ? note.text : '').toContain(x.note);
            }
            if (x.kind === 'refused') continue;
            const p = parts.shift()!;
            expect(p.metadata).toMatchObject({ untrusted: true, source: 'agent', agent: 'grok', ledgerId, attachment: i + 1, changes: { ...noChanges(), ...x.changes } });
            if (x.kind === 'file') {
              expect(p).toMatchObject({ mediaType: x.mediaType, ...(x.filename !== undefined && x.filename !== null ? { filename: x.filename } : {}) });
              expect(typeof p.raw === 'string' ? sha256Of(p.raw) : null).toBe(x.sha256);
            } else {
              expect(p).toMatchObject({ mediaType: x.mediaType });
              expect('data' in p ? p.data : undefined).toEqual(x.data);
            }
            checked.attachments++;
          }
          expect(parts).toEqual([]);
          // v0.3: the same files as `file.bytes`, the same data.
          const v03Files = v03Parts.map((p) => p.part).filter((p) => p.kind === 'file');
          const v1Files = v1Parts.map((p) => p.part).filter((p): p is Extract<V1Part, { raw: string }> => 'raw' in p);
          expect(v03Files.map((p) => p.kind === 'file' && 'bytes' in p.file && [p.file.bytes, p.file.mimeType, p.file.name])).toEqual(v1Files.map((p) => [p.raw, p.mediaType, p.filename]));
        }
        if (kind === 'applied:input-required') {
          // The question stays in the status message whatever is attached.
          expect(v1.status.message!.parts[1]!.metadata).toMatchObject({ untrusted: true, fence: nonce });
          if (expected.length) expect(v1.status.message!.parts.at(-1)!.text).toBe(`The bridge put this reply's attachments (1 data part) in the task history, message reply-${ledgerId}.`);
        }
        checked.messages++;
      } finally {
        cs.close();
      }
    });
  }
});

/** SHA-256 (hex) of base64 content. */
function sha256Of(base64: string): string {
  return createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex');
}
