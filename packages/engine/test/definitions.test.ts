import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { ask, defineFlow, defineInputs, FlowDefinitionError, form, toElicitationSchema, url } from '../src/index.js';
import { deployFlow } from './fixtures/deployFlow.js';

describe('form schemas become restricted elicitation schemas', () => {
  it('converts the primitive field kinds, keeping titles, bounds, formats and defaults', () => {
    const schema = toElicitationSchema(
      z.object({
        name: z.string().min(2).max(40).describe('Your name'),
        email: z.email(),
        when: z.iso.date(),
        count: z.number().int().min(1).max(9).default(3),
        ratio: z.number(),
        ok: z.boolean().default(false),
        color: z.enum(['red', 'green']),
        tags: z.array(z.enum(['a', 'b'])),
        note: z.string().optional(),
      }),
    );
    expect(schema).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 2, maxLength: 40, description: 'Your name' },
        email: { type: 'string', format: 'email' },
        when: { type: 'string', format: 'date' },
        count: { type: 'integer', minimum: 1, maximum: 9, default: 3 },
        ratio: { type: 'number' },
        ok: { type: 'boolean', default: false },
        color: { type: 'string', enum: ['red', 'green'] },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        note: { type: 'string' },
      },
      required: ['name', 'email', 'when', 'ratio', 'color', 'tags'],
    });
  });

  it.each([
    ['a nested object', z.object({ address: z.object({ city: z.string() }) }), /nested objects/],
    ['a union', z.object({ v: z.union([z.string(), z.number()]) }), /unions/],
    ['a free array', z.object({ list: z.array(z.string()) }), /multi-select/],
    ['a non-object', z.string(), /z\.object/],
    ['an unsupported format', z.object({ id: z.uuid() }), /format "uuid"/],
  ])('rejects %s when the flow is defined', (_label, schema, message) => {
    expect(() => form({ message: 'x', schema: schema as z.ZodObject })).toThrow(FlowDefinitionError);
    expect(() => form({ message: 'x', schema: schema as z.ZodObject })).toThrow(message);
  });

  it('validates answers with the original zod schema (refinements the wire cannot carry)', () => {
    const spec = form({ message: 'ticket', schema: z.object({ ticket: z.string().regex(/^CHG-\d+$/) }) });
    expect(spec.parse({ action: 'accept', content: { ticket: 'CHG-1' } })).toEqual({
      action: 'accept',
      content: { ticket: 'CHG-1' },
    });
    expect(spec.parse({ action: 'accept', content: { ticket: 'nope' } })).toBeUndefined();
    expect(spec.parse({ action: 'decline' })).toEqual({ action: 'decline' });
    expect(spec.parse({ action: 'maybe' })).toBeUndefined();
    expect(spec.parse('garbage')).toBeUndefined();
  });

  it('builds URL elicitations from context', () => {
    const spec = url({
      message: 'Sign the approval',
      url: ({ context }: { context: { id: string } }) => `https://approvals.example/${context.id}`,
    });
    expect(spec.build({ id: 'a1' })).toEqual({
      method: 'elicitation/create',
      params: { mode: 'url', message: 'Sign the approval', url: 'https://approvals.example/a1' },
    });
    expect(spec.parse({ action: 'accept' })).toEqual({ action: 'accept' });
  });
});

describe('defineFlow', () => {
  const inputs = defineInputs({ ok: form({ message: 'ok?', schema: z.object({ ok: z.boolean() }) }) });
  const machineAsking = (key: string) =>
    setup({}).createMachine({ initial: 'a', states: { a: { meta: { ask: [key] } }, b: { type: 'final' } } });

  it('rejects a state asking a key that is not in the catalog', () => {
    expect(() =>
      defineFlow({ name: 'f', description: 'd', args: z.object({}), inputs, machine: machineAsking('typo') }),
    ).toThrow(/asks "typo", which is not in its inputs catalog/);
  });

  it('rejects bad names and non-object argument schemas', () => {
    expect(() =>
      defineFlow({ name: 'bad name!', description: 'd', args: z.object({}), inputs, machine: machineAsking('ok') }),
    ).toThrow(FlowDefinitionError);
    expect(() =>
      defineFlow({ name: 'f', description: 'd', args: z.string() as never, inputs, machine: machineAsking('ok') }),
    ).toThrow(/args must be a z.object/);
  });

  it('rejects bad input keys', () => {
    expect(() => defineInputs({ 'has space': form({ message: 'x', schema: z.object({}) }) })).toThrow(
      FlowDefinitionError,
    );
  });

  it('has a definition hash that is stable for the same definition and changes with it', () => {
    const make = (target: string) =>
      defineFlow({
        name: 'f',
        description: 'd',
        args: z.object({}),
        inputs,
        machine: setup({}).createMachine({
          initial: 'a',
          states: {
            a: { meta: ask(inputs, 'ok'), on: { 'input.ok': target } },
            b: { type: 'final' },
            c: { type: 'final' },
          },
        }),
      });
    expect(make('b').hash).toBe(make('b').hash);
    expect(make('b').hash).not.toBe(make('c').hash);
    expect(deployFlow.hash).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});
