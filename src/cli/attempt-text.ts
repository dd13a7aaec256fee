/**
 * What a webhook attempt's stored error says beyond its HTTP status. src/downlink/deliver.ts
 * records an answer that is only a status as the error `HTTP 503` beside http_status 503: the
 * error column stays the self-contained reason that a task's cause ("dispatch exhausted after
 * … : HTTP 503") and the caller's status text ("attempt 1: HTTP 503") quote. A CLI line that
 * states the status already, `(HTTP 503)`, adds only what is left: nothing for that row, any other
 * detail as written (a network error, a timeout, text after the status). Rows of older stores are
 * read the same way.
 *
 * @returns the detail to print after the status, or null when the error only repeats the status
 *   (or there is none)
 */
export function attemptDetail(httpStatus: number | null, error: string | null): string | null {
  if (!error) return null;
  if (httpStatus === null) return error;
  const rest = error.replace(new RegExp(`^\\s*HTTP ${httpStatus}(?!\\d)[\\s:;,.-]*`), '');
  return rest === '' ? null : rest;
}

/**
 * The status and detail of an attempt as the CLI's lines write them after its outcome:
 * ` (HTTP 503)`, ` (HTTP 503): <detail>`, `: timed out after 10000 ms`, or '' ({@link attemptDetail}).
 */
export function statusAndDetail(httpStatus: number | null, error: string | null): string {
  const detail = attemptDetail(httpStatus, error);
  return `${httpStatus !== null ? ` (HTTP ${httpStatus})` : ''}${detail !== null ? `: ${detail}` : ''}`;
}

/** An attempt's result as it reaches the CLI: src/downlink/deliver.ts's outcome kind, status and error. */
export interface AttemptResult {
  outcome: 'accepted' | 'retry' | 'failed' | 'gone';
  httpStatus: number | null;
  error: string | null;
}

/**
 * What an attempt did, as the predicate of a sentence whose subject is the attempt (src/downlink/
 * deliver.ts classifyStatus gives the kinds): `accepted` "was accepted", `retry` (a 408, 429, 5xx or
 * network error, tried again while max_attempts and max_age_s allow) "failed", `failed` (any other
 * 3xx/4xx, not tried again) "was refused", `gone` (HTTP 410) "found the webhook gone". The raw kind
 * read wrong after "attempt": "first attempt retry (HTTP 500)" (fresh-user trial).
 */
export function attemptVerb(outcome: AttemptResult['outcome']): string {
  switch (outcome) {
    case 'accepted':
      return 'was accepted';
    case 'retry':
      return 'failed';
    case 'failed':
      return 'was refused';
    case 'gone':
      return 'found the webhook gone';
  }
}

/**
 * An attempt's result as the rest of a sentence about it: `was accepted (HTTP 202)`, `failed (HTTP 503)`,
 * `failed: network error: ECONNREFUSED`, `was refused (HTTP 404)` ({@link attemptVerb}, {@link statusAndDetail}).
 */
export function attemptResultText(r: AttemptResult): string {
  return `${attemptVerb(r.outcome)}${statusAndDetail(r.httpStatus, r.error)}`;
}

/**
 * An attempt that has an outcome, as the CLI's lines say it: `attempt 2 failed (HTTP 503)`,
 * `attempt 1 was refused (HTTP 404): <detail>` ({@link attemptResultText}).
 */
export function attemptOutcome(a: AttemptResult & { attempt: number }): string {
  return `attempt ${a.attempt} ${attemptResultText(a)}`;
}
