/**
 * The purity analysis (`round/purity.ts`): which states a round may start in
 * and have no side effect of its own, read off real XState machines. Every
 * kind of effect reachable from a state makes it impure (an invoke, a custom
 * action inline or named, `sendTo`, `enqueueActions`, `spawnChild`, an
 * `assign` that spawns), wherever it sits on the way: an entry, an exit, a
 * transition, an `always`, an `after`, a compound state's initial
 * transition, a state a history node restores. Pure built-ins keep a state
 * pure, and so do Baton's `notify()` and `progress()`.
 */
import { describe, expect, it } from 'vitest';
import {
  assign,
  cancel,
  emit,
  enqueueActions,
  fromPromise,
  log,
  raise,
  type StateValue,
  sendTo,
  setup,
  spawnChild,
} from 'xstate';
import { notify, progress } from '../src/index.js';
import { cannotSpawn, isPureFrom } from '../src/round/purity.js';

const noop = fromPromise(async () => 'done');
/** An assigner's helper that spawns: the assigner's own text never says so. */
const spawnFor = (args: any) => ({ ref: args.spawn('work') });

describe('isPureFrom', () => {
  const machine = setup({
    types: { context: {} as { n: number; ref?: unknown } },
    actors: { work: noop },
    actions: {
      bump: assign({ n: ({ context }) => context.n + 1 }),
      ping: () => {},
    },
  }).createMachine({
    id: 'm',
    context: { n: 0 },
    initial: 'working',
    states: {
      working: { invoke: { src: 'work', onDone: 'asking' } },
      asking: {
        after: { 1000: { target: 'expired', actions: raise({ type: 'tick' }) } },
        on: {
          yes: { target: 'done', actions: ['bump', assign({ n: 1 }), log('yes'), emit({ type: 'said' })] },
          no: { target: 'done', actions: [cancel('x'), notify({ kind: 'declined' }), progress({ progress: 1 })] },
        },
      },
      toWork: { on: { go: 'working' } },
      custom: { on: { go: { target: 'done', actions: () => {} } } },
      named: { on: { go: { target: 'done', actions: 'ping' } } },
      namedObject: { on: { go: { target: 'done', actions: { type: 'ping' } } } },
      entering: { on: { go: 'noisy' } },
      noisy: { entry: () => {}, on: { go: 'done' } },
      leaving: { exit: 'ping', on: { go: 'done' } },
      always: { always: { target: 'done', actions: sendTo('x', { type: 'y' }) } },
      enqueue: { on: { go: { actions: enqueueActions(({ enqueue }) => enqueue.assign({ n: 2 })) } } },
      spawning: { on: { go: { actions: spawnChild('work') } } },
      spawnInAssign: { on: { go: { actions: assign({ ref: ({ spawn }) => spawn('work') }) } } },
      spawnThroughHelper: { on: { go: { actions: assign((args) => spawnFor(args)) } } },
      compound: {
        initial: 'a',
        states: {
          a: { on: { next: 'b' } },
          b: { on: { next: '#m.nested' } },
        },
      },
      nested: {
        initial: { target: 'inner' },
        states: { inner: { invoke: { src: 'work' } } },
      },
      toHistory: { on: { back: 'remembering.hist' } },
      remembering: {
        initial: 'quiet',
        states: { hist: { type: 'history' }, quiet: {}, loud: { entry: 'ping' } },
      },
      parallel: {
        type: 'parallel',
        states: {
          left: { initial: 'l1', states: { l1: { on: { go: 'l2' } }, l2: {} } },
          right: { initial: 'r1', states: { r1: { on: { go: 'r2' } }, r2: { entry: 'ping' } } },
        },
      },
      done: { type: 'final' },
      expired: { type: 'final' },
    },
  });
  const pure = (value: StateValue) => isPureFrom(machine, value);

  it('is pure where only pure built-ins, notify() and progress() can run', () => {
    expect(pure('asking')).toBe(true);
    expect(pure('done')).toBe(true);
    expect(pure({ compound: 'a' })).toBe(false); // reaches #m.nested, whose initial child invokes
  });

  it('is impure where an actor is invoked or spawned, now or later', () => {
    expect(pure('working')).toBe(false);
    expect(pure('toWork')).toBe(false);
    expect(pure('spawning')).toBe(false);
    expect(pure('spawnInAssign')).toBe(false);
    expect(pure('spawnThroughHelper')).toBe(false);
    expect(pure({ nested: 'inner' })).toBe(false);
  });

  it('is impure where a custom action can run, inline or named, on a transition, an entry or an exit', () => {
    expect(pure('custom')).toBe(false);
    expect(pure('named')).toBe(false);
    expect(pure('namedObject')).toBe(false);
    expect(pure('entering')).toBe(false);
    expect(pure('leaving')).toBe(false);
    expect(pure('always')).toBe(false);
    expect(pure('enqueue')).toBe(false);
  });

  it('counts every state a history node may restore, and every region of a parallel state', () => {
    expect(pure('toHistory')).toBe(false);
    expect(pure({ remembering: 'quiet' })).toBe(true);
    expect(pure({ parallel: { left: 'l1', right: 'r1' } })).toBe(false);
    expect(pure({ parallel: { left: 'l1', right: 'r2' } })).toBe(false);
  });

  it('is impure for a value the machine does not have', () => {
    expect(pure('nowhere')).toBe(false);
    expect(pure('compound')).toBe(false);
    expect(pure({ compound: 'z' })).toBe(false);
  });

  it('reads a named pure built-in through the implementations', () => {
    const named = setup({ actions: { bump: assign({}) } }).createMachine({
      initial: 'a',
      states: { a: { on: { go: { target: 'b', actions: 'bump' } } }, b: {} },
    });
    expect(isPureFrom(named, 'a')).toBe(true);
    expect(isPureFrom(named.provide({ actions: { bump: () => {} } }), 'a')).toBe(false);
  });
});

describe('cannotSpawn', () => {
  it('is true only where the source shows the assigner cannot reach spawn', () => {
    for (const source of [
      '() => Math.random()',
      '({ context }) => context.n + 1',
      '({ context, event }, params) => event.output',
      '({context:e})=>e.n+1',
      'async ({ context }) => context',
      'function ({ context }) { return context.n; }',
      'nonce() { return 1; }',
    ]) {
      expect(cannotSpawn(source), source).toBe(true);
    }
    for (const source of [
      "({ spawn }) => spawn('x')",
      '(args) => helper(args)',
      'x => helper(x)',
      '({ context, ...rest }) => helper(rest)',
      '({ context: { n } }) => n',
      '({ context = {} }) => context',
      'function () { return helper(arguments[0]); }',
      'not a function at all',
    ]) {
      expect(cannotSpawn(source), source).toBe(false);
    }
  });
});
