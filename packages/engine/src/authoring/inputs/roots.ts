/**
 * The `roots` input: a `roots/list` request for the client's workspace roots,
 * bounded by `maxRoots` and `maxLength`.
 */
import { z } from 'zod';
import { type AnswerSizeOptions, DEFAULT_ANSWER_MAX_LENGTH, limitOption, tooLong } from './answerSize.js';
import { count, describeIssues } from './issues.js';
import { type CommonOptions, type InputSpec, type RootsAnswer, refusedMeta } from './spec.js';

/** Default most roots a roots answer may list. */
export const DEFAULT_MAX_ROOTS = 100;

const rootsResult = z.object({ roots: z.array(z.object({ uri: z.string(), name: z.string().optional() })) });

/**
 * A roots listing (`roots/list`): the client's workspace roots. The answer is bounded by
 * `maxRoots` (default 100) and `maxLength` (default 8,000 characters of JSON in all).
 *
 * @example wire: `{ method: 'roots/list' }`, answer `{ roots: [{ uri: 'file:///work', name: 'work' }] }`
 */
export function roots(
  options: CommonOptions & AnswerSizeOptions & { /** Most roots accepted (default 100). */ maxRoots?: number } = {},
): InputSpec<RootsAnswer> {
  const maxLength = limitOption('roots maxLength', options.maxLength, DEFAULT_ANSWER_MAX_LENGTH);
  const maxRoots = limitOption('roots maxRoots', options.maxRoots, DEFAULT_MAX_ROOTS);
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  const oversized = (raw: unknown): string | undefined => {
    const list = typeof raw === 'object' && raw !== null ? (raw as { roots?: unknown }).roots : undefined;
    if (Array.isArray(list) && list.length > maxRoots) {
      return `the client listed ${count(list.length)} roots; at most ${count(maxRoots)} are accepted`;
    }
    return tooLong(raw, maxLength);
  };
  return {
    kind: 'roots',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    shape: {
      kind: 'roots',
      ...(options.maxLength !== undefined ? { maxLength } : {}),
      ...(options.maxRoots !== undefined ? { maxRoots } : {}),
      ...(onlyWhenAsked ? { onlyWhenAsked } : {}),
    },
    build: (_context, note) => (note ? { method: 'roots/list', params: refusedMeta(note) } : { method: 'roots/list' }),
    parse(raw) {
      const tooLarge = oversized(raw);
      if (tooLarge) return { ok: false, problem: tooLarge };
      const result = rootsResult.safeParse(raw);
      return result.success
        ? { ok: true, answer: { action: 'accept', roots: result.data.roots } }
        : { ok: false, problem: describeIssues(result.error.issues, raw) };
    },
    oversized,
  };
}
