import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidParamsError } from '../src/index.js';
import { checkJsonValue, checkRoundInput, MAX_INPUT_DEPTH } from '../src/round/clientInput.js';

/** `levels` arrays, one inside the other, built without recursion. */
function nestedArrays(levels: number, innermost: unknown = 1): unknown {
  let value = innermost;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

function nestedObjects(levels: number, innermost: unknown = 1): unknown {
  let value = innermost;
  for (let i = 0; i < levels; i++) value = { x: value };
  return value;
}

const refusal = (run: () => void): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidParamsError);
    return (error as Error).message;
  }
  throw new Error('expected an InvalidParamsError');
};

describe('checkJsonValue', () => {
  it(`accepts ${MAX_INPUT_DEPTH} levels of nesting and refuses one more, naming the top-level member`, () => {
    expect(MAX_INPUT_DEPTH).toBe(64);
    expect(() => checkJsonValue(nestedArrays(64), 'arguments')).not.toThrow();
    expect(() => checkJsonValue(nestedObjects(64), 'arguments')).not.toThrow();
    expect(refusal(() => checkJsonValue(nestedArrays(65), 'arguments'))).toBe(
      'arguments[0] is nested too deeply (limit 64 levels)',
    );
    expect(refusal(() => checkJsonValue({ a: 1, deep: nestedObjects(64) }, 'arguments'))).toBe(
      'arguments.deep is nested too deeply (limit 64 levels)',
    );
  });

  it('refuses a million levels at once, without recursion', () => {
    const text = `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`;
    expect(refusal(() => checkJsonValue(JSON.parse(text), 'inputResponses.k'))).toBe(
      'inputResponses.k[0] is nested too deeply (limit 64 levels)',
    );
  });

  it('refuses numbers that are not finite, with their path', () => {
    expect(refusal(() => checkJsonValue(JSON.parse('{"a":{"b c":[0,1e400]}}'), 'arguments'))).toBe(
      'arguments.a["b c"][1] holds a number that is not finite',
    );
    expect(refusal(() => checkJsonValue(Number.NEGATIVE_INFINITY, 'inputResponses.n'))).toBe(
      'inputResponses.n holds a number that is not finite',
    );
    expect(refusal(() => checkJsonValue([Number.NaN], 'arguments'))).toBe(
      'arguments[0] holds a number that is not finite',
    );
  });

  it('refuses values JSON cannot carry', () => {
    expect(refusal(() => checkJsonValue({ n: 1n }, 'arguments'))).toBe(
      'arguments.n holds a bigint, which JSON cannot carry',
    );
  });

  it('keeps echoed paths short: long keys and deep paths are cut', () => {
    const key = 'k'.repeat(10_000);
    const message = refusal(() => checkJsonValue({ [key]: Number.POSITIVE_INFINITY }, 'arguments'));
    expect(message).toBe(`arguments["${'k'.repeat(32)}…"] holds a number that is not finite`);
    const deep = refusal(() => checkJsonValue(nestedObjects(20, Number.POSITIVE_INFINITY), 'arguments'));
    expect(deep).toBe('arguments.x.x.x.x.x.x.x.x… holds a number that is not finite');
  });

  it('accepts every JSON value within the depth limit (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 10 }), (value) => {
        checkJsonValue(value, 'arguments');
      }),
      { numRuns: 300 },
    );
  });
});

describe('checkRoundInput', () => {
  it('checks the arguments and every answer, named by key', () => {
    expect(() => checkRoundInput({ version: '1' }, { a: { action: 'accept', content: { ok: true } } })).not.toThrow();
    expect(() => checkRoundInput(undefined, undefined)).not.toThrow();
    expect(refusal(() => checkRoundInput({}, { 'odd key': { n: Number.POSITIVE_INFINITY } }))).toBe(
      'inputResponses["odd key"].n holds a number that is not finite',
    );
    expect(refusal(() => checkRoundInput({}, [1]))).toMatch(/^inputResponses must be an object/);
    // What a `__proto__` key made inherited is read by property access, so it is checked too.
    const inherited = Object.create({ k: { n: Number.POSITIVE_INFINITY } });
    expect(refusal(() => checkRoundInput({}, inherited))).toBe('inputResponses.k.n holds a number that is not finite');
  });
});
