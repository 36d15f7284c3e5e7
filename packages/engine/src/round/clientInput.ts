/**
 * The bounded check a round's client input passes before anything walks it
 * recursively (canonical JSON for the binding and the responses digest, zod,
 * `JSON.stringify` of the next state, the audit trail). Arguments and each
 * `inputResponses` value are walked iteratively, never recursively, and
 * refused with an {@link InvalidParamsError} (JSON-RPC -32602 on the wire)
 * whose message says where and what: nested deeper than
 * {@link MAX_INPUT_DEPTH} levels, a number that is not finite (JSON's `1e400`
 * parses to `Infinity`), or a value JSON cannot carry.
 */
import { InvalidParamsError } from '../errors.js';

/** How deeply arrays and objects may nest in the arguments and in each answer of a round. */
export const MAX_INPUT_DEPTH = 64;

/** A container met during the walk, linked to its parent so a path is only built on failure. */
interface Frame {
  readonly value: object;
  readonly depth: number;
  readonly parent: Frame | undefined;
  readonly key: string | number;
}

/**
 * Check a round's arguments and answers.
 * @throws InvalidParamsError with a sentence for the client, e.g.
 * `arguments.x is nested too deeply (limit 64 levels)` or
 * `inputResponses.confirm holds a number that is not finite`.
 */
export function checkRoundInput(args: unknown, inputResponses: unknown): void {
  checkJsonValue(args, 'arguments');
  if (inputResponses === undefined) return;
  if (inputResponses === null || typeof inputResponses !== 'object' || Array.isArray(inputResponses)) {
    throw new InvalidParamsError('inputResponses must be an object whose keys are the requests answered');
  }
  const responses = inputResponses as Record<string, unknown>;
  // `for...in`, not own keys: a `__proto__` key can turn answers into inherited properties,
  // and whatever property access can read must be checked too.
  for (const key in responses) checkJsonValue(responses[key], `inputResponses${segment(key)}`);
}

/**
 * Check one JSON value, iteratively: depth at most {@link MAX_INPUT_DEPTH}, finite numbers, and
 * nothing JSON cannot carry (bigints, functions, symbols). `name` starts every path in messages.
 * @throws InvalidParamsError naming the path of the first problem found.
 */
export function checkJsonValue(value: unknown, name: string, maxDepth: number = MAX_INPUT_DEPTH): void {
  checkScalar(value, name, undefined, '');
  if (value === null || typeof value !== 'object') return;
  const stack: Frame[] = [{ value, depth: 1, parent: undefined, key: '' }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const container = frame.value;
    const keys: readonly (string | number)[] = Array.isArray(container)
      ? Array.from(container.keys())
      : Object.keys(container);
    for (const key of keys) {
      const child = (container as Record<string | number, unknown>)[key];
      checkScalar(child, name, frame, key);
      if (child === null || typeof child !== 'object') continue;
      if (frame.depth >= maxDepth) {
        // Name the top-level member it is under: the full path would be as long as the nesting.
        throw new InvalidParamsError(
          `${name}${segment(topKey(frame, key))} is nested too deeply (limit ${maxDepth} levels)`,
        );
      }
      stack.push({ value: child, depth: frame.depth + 1, parent: frame, key });
    }
  }
}

/**
 * Refuse a scalar JSON cannot carry. Where it is (`name`, or member `key` of `frame`) is only
 * spelled out on failure: this runs for every member of every argument and answer.
 */
function checkScalar(value: unknown, name: string, frame: Frame | undefined, key: string | number): void {
  switch (typeof value) {
    case 'number':
      if (!Number.isFinite(value)) {
        throw new InvalidParamsError(`${whereOf(name, frame, key)} holds a number that is not finite`);
      }
      return;
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new InvalidParamsError(`${whereOf(name, frame, key)} holds a ${typeof value}, which JSON cannot carry`);
    default:
      return;
  }
}

function whereOf(name: string, frame: Frame | undefined, key: string | number): string {
  return frame === undefined ? name : pathOf(name, frame, key);
}

/** The key of the top-level member that member `key` of `frame` is under. */
function topKey(frame: Frame, key: string | number): string | number {
  let current: Frame = frame;
  let top: string | number = key;
  while (current.parent !== undefined) {
    top = current.key;
    current = current.parent;
  }
  return top;
}

/** Segments shown in a path before it is cut short. */
const MAX_SEGMENTS = 8;
/** Characters of one key shown in a path. */
const MAX_KEY_CHARS = 32;

function pathOf(name: string, frame: Frame, key: string | number): string {
  const keys: (string | number)[] = [key];
  for (let current: Frame | undefined = frame; current?.parent !== undefined; current = current.parent) {
    keys.push(current.key);
  }
  keys.reverse();
  const shown = keys.slice(0, MAX_SEGMENTS).map(segment).join('');
  return `${name}${shown}${keys.length > MAX_SEGMENTS ? '…' : ''}`;
}

/** `.name`, `[3]` or `["odd key"]`, a long key cut short: client keys are echoed, so bounded. */
function segment(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  const short = key.length > MAX_KEY_CHARS ? `${key.slice(0, MAX_KEY_CHARS)}…` : key;
  return /^[A-Za-z_$][\w$]*$/.test(short) ? `.${short}` : `[${JSON.stringify(short)}]`;
}
