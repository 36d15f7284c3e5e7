/**
 * The wording of zod issues for the people who answer: a refused answer is
 * asked again with one phrase that names the fields, what was wrong and the
 * limits, never the values given (`count: must be a whole number; note:
 * required`). An author's own message (`.regex(re, 'a ticket looks like
 * CHG-123')`) is kept as written.
 */
import type { z } from 'zod';
import type { AnswerIssue } from './spec.js';

/** A number in words for a message (`8,000`), or `too many` when it is not finite. */
export const count = (n: number) => (Number.isFinite(n) ? n.toLocaleString('en-US') : 'too many');

/** What a zod type is called in a hint. */
const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  bigint: 'a whole number',
  date: 'a date',
};

const FORMAT_WORDS: Record<string, string> = {
  email: 'an email address',
  url: 'a URL',
  uuid: 'a UUID',
  regex: 'in the expected format',
  date: 'a date (YYYY-MM-DD)',
  datetime: 'a date and time (ISO 8601)',
  time: 'a time (HH:MM:SS)',
  starts_with: 'in the expected format',
  ends_with: 'in the expected format',
  includes: 'in the expected format',
};

/** Whether a message is zod's own (an author's `.regex(re, 'a ticket looks like CHG-123')` is kept as written). */
const zodsOwn = (message: string) => /^(Invalid|Too (small|big)|Expected)\b/.test(message);

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function sizeWords(origin: string, n: number, bound: 'least' | 'most', inclusive: boolean): string {
  const limit = count(n);
  const plural = n === 1 ? '' : 's';
  const unit =
    origin === 'string' ? ` character${plural}` : origin === 'array' || origin === 'set' ? ` item${plural}` : '';
  if (inclusive) return `at ${bound} ${limit}${unit}`;
  return `${bound === 'least' ? 'more' : 'less'} than ${limit}${unit}`;
}

/** One zod issue in words: what was wrong, never the value given. */
function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.path.length > 0 && valueAt(input, issue.path) === undefined) return 'required';
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      return sizeWords(issue.origin, Number(issue.minimum), 'least', issue.inclusive ?? true);
    case 'too_big':
      return sizeWords(issue.origin, Number(issue.maximum), 'most', issue.inclusive ?? true);
    case 'invalid_format':
      if (!zodsOwn(issue.message)) return issue.message;
      return `must be ${FORMAT_WORDS[issue.format] ?? `a valid ${issue.format}`}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'unrecognized_keys':
      return 'has fields the form does not know';
    case 'invalid_union':
      return 'matches none of the accepted shapes';
    default:
      return issue.message;
  }
}

/** A path in words: `roots[0].uri`. */
const fieldName = (path: readonly PropertyKey[]) =>
  path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i > 0 ? '.' : ''}${String(key)}`)).join('') ||
  'answer';

/**
 * Zod issues as one user-facing phrase: field names, what was wrong and the limits, never the
 * values given (`count: must be a whole number; level: must be one of "low", "high"; note: required`).
 * `input` is what was parsed (to tell a missing field from one of the wrong type).
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[], input?: unknown): string {
  return listIssues(issues, input)
    .map((issue) => `${issue.field}: ${issue.hint}`)
    .join('; ');
}

/**
 * The same, one entry per field (at most five): `[{ field: 'count', hint: 'must be a whole number' }]`,
 * for answers refused through an API that names the fields apart.
 */
export function listIssues(issues: readonly z.core.$ZodIssue[], input?: unknown): AnswerIssue[] {
  return issues.slice(0, 5).map((issue) => ({ field: fieldName(issue.path), hint: describeIssue(issue, input) }));
}
