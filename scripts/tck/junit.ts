/**
 * Reading the kit's per-test outcomes from pytest's JUnit XML (`--junitxml`).
 */


/** One test's outcome, read from the JUnit XML. */
export interface TestResult {
  id: string;
  outcome: 'passed' | 'failed' | 'error' | 'skipped';
  message: string;
  seconds: number;
}

function xmlText(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&amp;/g, '&');
}

function attr(tag: string, name: string): string {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? xmlText(m[1]!) : '';
}

/** pytest's JUnit XML: one `<testcase>` per test, with a `<failure>`, `<error>` or `<skipped>` child. */
export function parseJunit(xml: string): TestResult[] {
  const out: TestResult[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const head = m[1]!;
    const inner = m[3] ?? '';
    const cls = attr(head, 'classname');
    const name = attr(head, 'name');
    const file = attr(head, 'file');
    // classname is the module path plus the class, if any: tests.mandatory.x.test_y[.TestZ]
    const modulePath = file.replace(/\.py$/, '').split('/').join('.');
    const klass = file && cls.startsWith(`${modulePath}.`) ? cls.slice(modulePath.length + 1) : '';
    const id = file ? [file, klass, name].filter(Boolean).join('::') : `${cls}::${name}`;
    const child = /<(failure|error|skipped)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(inner);
    const kind = child?.[1];
    const outcome: TestResult['outcome'] = kind === 'failure' ? 'failed' : kind === 'error' ? 'error' : kind === 'skipped' ? 'skipped' : 'passed';
    // A failing test that also errors in teardown is a failure; keep the first message.
    const failure = /<failure\b([^>]*?)(?:\/>|>)/.exec(inner);
    const message = failure ? attr(failure[1]!, 'message') : child ? attr(child[2]!, 'message') || xmlText(child[3] ?? '').trim() : '';
    out.push({ id, outcome: failure ? 'failed' : outcome, message, seconds: Number(attr(head, 'time')) || 0 });
  }
  return out;
}
