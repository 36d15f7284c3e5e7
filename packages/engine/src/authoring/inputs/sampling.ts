/**
 * The `sampling` input: a `sampling/createMessage` request the client's model
 * answers, bounded by `maxLength`. A refused answer is asked again with the
 * reason in `_meta` (nobody reads a sampling request's text as the flow's).
 */
import { z } from 'zod';
import type { SamplingParams } from '../../contract/wire.js';
import { type AnswerSizeOptions, DEFAULT_ANSWER_MAX_LENGTH, limitOption, tooLong } from './answerSize.js';
import { describeIssues } from './issues.js';
import {
  type CommonOptions,
  type FromContext,
  type InputSpec,
  refusedMeta,
  resolve,
  type SamplingAnswer,
  type SamplingResult,
} from './spec.js';

const samplingResult = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.looseObject({ type: z.string(), text: z.string().optional() }),
  model: z.string(),
  stopReason: z.string().optional(),
});

/**
 * A sampling request (`sampling/createMessage`): the client's model answers. The answer is
 * bounded by `maxLength` (default 8,000 characters of JSON, the model's text included).
 *
 * @example wire: `{ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: '…' } }], maxTokens: 400 } }`
 */
export function sampling<TContext = any>(
  options: { params: FromContext<SamplingParams, TContext> } & CommonOptions & AnswerSizeOptions,
): InputSpec<SamplingAnswer, TContext> {
  const maxLength = limitOption('sampling maxLength', options.maxLength, DEFAULT_ANSWER_MAX_LENGTH);
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  const oversized = (raw: unknown) => tooLong(raw, maxLength);
  return {
    kind: 'sampling',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    shape: {
      kind: 'sampling',
      ...(options.maxLength !== undefined ? { maxLength } : {}),
      ...(onlyWhenAsked ? { onlyWhenAsked } : {}),
    },
    // The note goes in `_meta`: nobody reads a sampling request's text as a message from the flow.
    build: (context, note) => ({
      method: 'sampling/createMessage',
      params: { ...resolve(options.params, context), ...refusedMeta(note) },
    }),
    parse(raw) {
      const tooLarge = oversized(raw);
      if (tooLarge) return { ok: false, problem: tooLarge };
      const result = samplingResult.safeParse(raw);
      return result.success
        ? { ok: true, answer: { action: 'accept', result: result.data as SamplingResult } }
        : { ok: false, problem: describeIssues(result.error.issues, raw) };
    },
    oversized,
  };
}
