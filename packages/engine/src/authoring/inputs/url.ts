/**
 * The `url` input: a URL elicitation, for something the user completes out of
 * band (sign in, pay); its answer is only the user's action.
 */
import {
  type CommonOptions,
  elicitResult,
  type FromContext,
  type InputSpec,
  NOT_AN_ELICITATION_RESULT,
  never,
  resolve,
  type UrlAnswer,
  withNote,
} from './spec.js';

/**
 * A URL elicitation (`elicitation/create`, mode `url`): the user completes something out of band.
 *
 * @example wire: `{ method: 'elicitation/create', params: { mode: 'url', message: 'Sign in', url: 'https://…' } }`
 */
export function url<TContext = any>(
  options: { message: FromContext<string, TContext>; url: FromContext<string, TContext> } & CommonOptions,
): InputSpec<UrlAnswer, TContext> {
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  return {
    kind: 'url',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    shape: { kind: 'url', ...(onlyWhenAsked ? { onlyWhenAsked } : {}) },
    build: (context, note) => ({
      method: 'elicitation/create',
      params: {
        mode: 'url',
        message: withNote(resolve(options.message, context), note),
        url: resolve(options.url, context),
      },
    }),
    parse(raw) {
      const result = elicitResult.safeParse(raw);
      return result.success
        ? { ok: true, answer: { action: result.data.action } }
        : { ok: false, problem: NOT_AN_ELICITATION_RESULT };
    },
    oversized: never,
  };
}
