/** A small flow with a parallel state of two nested regions, for the inspect tests. */
import { type AuditEntry, ask, defineFlow, defineInputs, form, type InputEvents } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

const inputs = defineInputs({
  name: form({ message: 'Your name?', schema: z.object({ name: z.string() }) }),
  colour: form({ message: 'Favourite colour?', schema: z.object({ colour: z.string() }) }),
});

export const nested = defineFlow({
  name: 'nested_demo',
  description: 'parallel regions with nested states',
  args: z.object({}),
  inputs,
  machine: setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
    id: 'nested_demo',
    initial: 'gather',
    states: {
      gather: {
        type: 'parallel',
        states: {
          left: {
            initial: 'askName',
            states: {
              askName: { meta: ask(inputs, 'name'), on: { 'input.name': 'named' } },
              named: { type: 'final' },
            },
          },
          right: {
            initial: 'waiting',
            states: {
              waiting: { meta: ask(inputs, 'colour'), after: { 60000: 'timedOut' }, on: { 'input.colour': 'picked' } },
              picked: { type: 'final' },
              timedOut: { type: 'final' },
            },
          },
        },
        onDone: 'done',
      },
      done: { type: 'final' },
    },
  }),
});

/** Two recorded rounds of `nested_demo`: both regions ask, then both answers finish it. */
export function recordedNestedEntries(): AuditEntry[] {
  const base = {
    fid: 'fi_nested_1',
    flow: nested.name,
    hash: nested.hash,
    principal: 'cHJpbmNpcGFs',
    via: 'call' as const,
  };
  const asking = { gather: { left: 'askName', right: 'waiting' } };
  return [
    {
      ...base,
      round: 1,
      at: Date.UTC(2026, 10, 29, 10, 0, 0),
      ms: 3,
      before: null,
      after: asking,
      path: [asking],
      asked: ['name', 'colour'],
      received: [],
      outcome: 'input_required',
    },
    {
      ...base,
      round: 2,
      at: Date.UTC(2026, 10, 29, 10, 0, 40),
      ms: 5,
      before: asking,
      after: 'done',
      path: [
        asking,
        { gather: { left: 'named', right: 'waiting' } },
        { gather: { left: 'named', right: 'picked' } },
        'done',
      ],
      asked: [],
      received: [
        { key: 'name', action: 'accept' },
        { key: 'colour', action: 'accept' },
      ],
      outcome: 'complete',
    },
  ];
}
