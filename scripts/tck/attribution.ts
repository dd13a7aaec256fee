import type { TestResult } from './junit.js';

/**
 * Why a kit test does not pass, for the results file: our bug, a design choice (with the spec
 * text), or a kit bug (with its file and line). Kept beside the scripts and read against each
 * run; a failure matching none is reported as unattributed, never hidden.
 */
interface Rule {
  /** Matched against the test id and the kit's message. */
  test: RegExp;
  why: string;
}

const REUSED_ID =
  'kit bug: tck/requirements/base.py:25–31 `tck_id(name)` gives one id per name per session, so different messages (other text, other context) share a messageId; a2a.proto `Message.message_id` is "The unique identifier … of the message", and the bridge detects duplicates by messageId (A2A v1.0 §3.3.1) and refuses a reused id with other content (-32602)';

// First match wins: the binding a test was skipped for comes before what the test is about.
const V1_RULES: Rule[] = [
  { test: /Transport 'grpc' not configured|gRPC transport not configured/, why: 'skipped: gRPC is not a binding the bridge declares (it serves JSON-RPC and HTTP+JSON)' },
  {
    test: /test_agent_card_validates_against_schema/,
    why: 'design choice (docs/discovery.md): the kit fetches the card without `A2A-Version` (tests/compatibility/conftest.py:101, a bare `httpx.get(url)`), and A2A v1.0 §3.6.2 says "Agents MUST interpret empty value as 0.3 version": it gets the v0.3 card with the v1.0 interfaces embedded. With `A2A-Version: 1.0` the card is pure v1.0 (test/integration/a2a/discovery.test.ts)',
  },
  { test: /was already used for a different message/, why: REUSED_ID },
  { test: /Expected task state 'TASK_STATE_INPUT_REQUIRED' but got 'TASK_STATE_CANCELED'/, why: `${REUSED_ID}: tests/compatibility/_task_helpers.py:88 sends every "working task" with the same id, so the bridge answers the first such task, which an earlier test canceled` },
  {
    test: /CORE-SEND-003/,
    why: 'kit bug: tck/requirements/core_operations.py:96–121 says the unsupported media type "MUST result in ContentTypeNotSupportedError" but sets no `expected_error`, so tests/compatibility/core_operations/test_requirements.py:100–113 counts the -32005 / HTTP 415 the bridge answers as "Operation failed"',
  },
  {
    test: /TestTextArtifact/,
    why: 'design choice (docs/agent-text.md): agent text is hostile, so the bridge fences it: the part holds the untrusted label and a BEGIN-AGENT-TEXT line with a per-reply nonce, the text, and the END-AGENT-TEXT line (and metadata `untrusted: true`); the kit compares the part with the bare text (tests/compatibility/core_operations/test_artifacts.py:102)',
  },
  {
    test: /TestFileUrlArtifact/,
    why: 'design choice (docs/agent-text.md): the bridge makes no URL file parts: a file reaches the caller as an attachment of the reply, its bytes inline, never as an address the agent chose for the caller to fetch; the scripted agent sends the link as text',
  },
  {
    test: /TestFileArtifact|TestDataArtifact/,
    why: 'design choice (docs/agent-text.md): the reply\'s text is the first artifact (`reply-<ledger id>`, with a bridge part pointing at the attachments) and the attached output.txt / JSON the second (`attachments-<ledger id>`, a file part and a data part: test/integration/a2a/agent-content.test.ts, streaming.test.ts); the kit reads only artifacts[0].parts[0] (tests/compatibility/core_operations/test_artifacts.py:136–145, tck/validators/payload.py:197–207)',
  },
  {
    test: /TestMessageResponse/,
    why: 'design choice: new work always becomes a task, so the caller can poll, cancel and get the answer later; the reply is an email that comes minutes to hours later (A2A v1.0 §3.1.2: the agent "MAY return a `Task` … or MAY return a `Message`")',
  },
  { test: /Agent supports (streaming|push notifications)/, why: 'skipped by the kit: the capability is declared, so the "not supported" error cannot be provoked' },
  { test: /capabilities for: \['agent-card'\]|extended/i, why: 'skipped: the bridge has no extended card (capabilities.extendedAgentCard false: its one bearer has nothing more to see)' },
  { test: /required-extension/, why: 'skipped by the kit: it needs an agent that declares its test extension as required' },
  { test: /No requirements at this level/, why: 'skipped by the kit: no requirement of that level in that group' },
];

/** The attribution of one v1.0 kit result that did not pass. */
export function attribution10(r: TestResult): string {
  const rule = V1_RULES.find((x) => x.test.test(r.id) || x.test.test(r.message));
  if (rule) return rule.why;
  if (r.outcome === 'skipped') return `skipped by the kit: ${r.message.slice(0, 120)}`;
  return '**unattributed**';
}

const V03_RULES: Rule[] = [
  {
    test: /invalid_request4--32602/,
    why: 'design choice: a request without `id` is a notification (JSON-RPC 2.0 §4.1: "The Server MUST NOT reply to a Notification"); the bridge never runs one (its work would have no one to hear the outcome) and answers -32600 for a known method without looking at its params; the kit expects -32602',
  },
  {
    test: /test_task_history_length/,
    why: 'design choice (the spec\'s): the scripted agent completes a task whose message id has no kit prefix at once (the default scenario), and the kit then sends follow-ups by `taskId` to the completed task; A2A v1.0 §3.1.1: "UnsupportedOperationError: Messages sent to Tasks that are in a terminal state (e.g., completed, canceled, rejected) cannot accept further messages" (-32004); historyLength itself is checked by test/integration/a2a/conformance-v03.test.ts',
  },
  { test: /authenticated_extended_card/, why: 'skipped: the bridge has no extended card (supportsAuthenticatedExtendedCard false)' },
  { test: /multi_transport/, why: 'skipped by the kit: it counts the v0.3 card\'s transports (one: JSONRPC)' },
];

/** The attribution of one v0.3 kit result that did not pass. */
export function attribution03(r: TestResult): string {
  const rule = V03_RULES.find((x) => x.test.test(r.id) || x.test.test(r.message));
  if (rule) return rule.why;
  if (r.outcome === 'skipped') return 'skipped by the kit';
  return '**unattributed**';
}
