import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { ask, defineFlow, defineInputs, form, roots, toMermaid } from '../src/index.js';
import { allStates } from '../src/testing/index.js';
import { deployFlow } from './fixtures/deployFlow.js';

describe('toMermaid', () => {
  it('draws every state and transition of the deploy flow, marking the states that ask', () => {
    const text = toMermaid(deployFlow);
    expect(text.startsWith('stateDiagram-v2\n')).toBe(true);
    for (const id of allStates(deployFlow)) expect(text).toContain(id.split('.').pop()!);
    expect(text).toContain('[*] --> planning');
    expect(text).toContain('planning --> awaiting : done plan');
    expect(text).toContain('awaiting --> expired : after 15 min');
    expect(text).toContain('note right of awaiting : asks confirm_deploy (form), change_ticket (form)');
    expect(text).toContain('class awaiting,confirmed asks');
    const transitions = [...deployFlow.machine.root.states.awaiting!.transitions.values()].flat();
    const drawn = text.split('\n').filter((l) => l.trim().startsWith('awaiting -->'));
    expect(drawn).toHaveLength(transitions.length);
  });

  it('draws nested and parallel states', () => {
    const inputs = defineInputs({
      ok: form({ message: 'ok?', schema: z.object({ ok: z.boolean() }) }),
      where: roots(),
    });
    const flow = defineFlow({
      name: 'nested',
      description: 'd',
      args: z.object({}),
      inputs,
      machine: setup({}).createMachine({
        id: 'n',
        initial: 'review',
        states: {
          review: {
            type: 'parallel',
            states: {
              legal: {
                initial: 'asking',
                states: { asking: { meta: ask(inputs, 'ok'), on: { 'input.ok': 'done' } }, done: { type: 'final' } },
              },
              tech: {
                initial: 'asking',
                states: {
                  asking: { meta: ask(inputs, 'where'), on: { 'input.where': 'done' } },
                  done: { type: 'final' },
                },
              },
            },
            onDone: 'finished',
          },
          finished: { type: 'final' },
        },
      }),
    });
    const text = toMermaid(flow);
    expect(text).toContain('state review {');
    expect(text).toContain('state review__legal {');
    expect(text).toMatch(/\n\s+--\n/);
    expect(text).toContain('note right of review__legal__asking : asks ok (form)');
    expect(text).toContain('note right of review__tech__asking : asks where (roots)');
    expect(text).toContain('review --> finished : done');
  });
});
