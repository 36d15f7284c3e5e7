/**
 * The `form` input: a form elicitation whose wire schema is derived from the
 * author's zod object schema, and whose answer that schema validates.
 */
import type { z } from 'zod';
import { toElicitationSchema } from '../elicitationSchema.js';
import { describeIssues, listIssues } from './issues.js';
import {
  type CommonOptions,
  elicitResult,
  type FormAnswer,
  type FromContext,
  type InputSpec,
  NOT_AN_ELICITATION_RESULT,
  never,
  resolve,
  withNote,
} from './spec.js';

/**
 * A form elicitation (`elicitation/create`, mode `form`). Bound every string field with
 * `.max()` (and arrays with `.max()`): the limit shows in the wire schema as `maxLength`, and
 * an answer over it is asked again with the reason in the message.
 *
 * @example
 * ```ts
 * import { form } from '@baton/engine';
 * import { z } from 'zod';
 *
 * const confirm = form({ message: ({ context }) => `Deploy ${context.version}?`, schema: z.object({ confirm: z.boolean() }) });
 * // wire: { method: 'elicitation/create', params: { mode: 'form', message: 'Deploy 1.2.3?',
 * //         requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } } }
 * ```
 * @throws FlowDefinitionError when the schema cannot be expressed as an elicitation form.
 */
export function form<TSchema extends z.ZodObject, TContext = any>(
  options: { message: FromContext<string, TContext>; schema: TSchema } & CommonOptions,
): InputSpec<FormAnswer<z.output<TSchema>>, TContext> {
  const requestedSchema = toElicitationSchema(options.schema);
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  return {
    kind: 'form',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    // `onlyWhenAsked` changes what a round accepts, so it is part of the definition (only when set:
    // the hash of every other form stays what it was).
    shape: { kind: 'form', requestedSchema, ...(onlyWhenAsked ? { onlyWhenAsked } : {}) },
    build: (context, note) => ({
      method: 'elicitation/create',
      params: { mode: 'form', message: withNote(resolve(options.message, context), note), requestedSchema },
    }),
    parse(raw) {
      const result = elicitResult.safeParse(raw);
      if (!result.success) return { ok: false, problem: NOT_AN_ELICITATION_RESULT };
      if (result.data.action !== 'accept') return { ok: true, answer: { action: result.data.action } };
      // The schema's output, not the raw content: unknown fields are dropped.
      const content = options.schema.safeParse(result.data.content ?? {});
      return content.success
        ? { ok: true, answer: { action: 'accept', content: content.data } }
        : {
            ok: false,
            problem: describeIssues(content.error.issues, result.data.content ?? {}),
            issues: listIssues(content.error.issues, result.data.content ?? {}),
          };
    },
    oversized: never,
  };
}
