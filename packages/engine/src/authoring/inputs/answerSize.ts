/**
 * The bounds of answers that no form schema bounds (sampling, roots): the
 * size options, their defaults and the check that refuses an answer over its
 * size before the round's state is redeemed, with a message naming the limit.
 */
import { FlowDefinitionError } from '../../errors.js';
import { count } from './issues.js';

/** The length of a value's JSON encoding; `Infinity` when it has none (too deep, cyclic, bigint). */
export function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Default size limit of a sampling or roots answer: characters of its JSON encoding. */
export const DEFAULT_ANSWER_MAX_LENGTH = 8000;

/** Size options of the answers that no form schema bounds (sampling, roots). */
export interface AnswerSizeOptions {
  /**
   * Most characters the answer's JSON encoding may have (default 8,000): the model's text
   * and everything around it, or all roots with their names. A larger answer is refused
   * before the state is redeemed, with a message naming the limit.
   */
  maxLength?: number;
}

/** A size option, checked when the flow is defined: a positive integer, or the default. */
export function limitOption(name: string, value: number | undefined, fallback: number): number {
  const limit = value ?? fallback;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new FlowDefinitionError(`${name} must be a positive integer, got ${String(value)}`);
  }
  return limit;
}

/** Why an answer is refused for its JSON length, when it is over `maxLength`. */
export function tooLong(raw: unknown, maxLength: number): string | undefined {
  const length = jsonLength(raw);
  return length > maxLength
    ? `the answer is ${count(length)} characters long; at most ${count(maxLength)} are accepted`
    : undefined;
}
