import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { toElicitationSchema } from '../src/authoring/elicitationSchema.js';
import { ask, defineFlow, defineInputs, FlowDefinitionError, form, roots, sampling, url } from '../src/index.js';
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
      ok: true,
      answer: { action: 'accept', content: { ticket: 'CHG-1' } },
    });
    expect(spec.parse({ action: 'accept', content: { ticket: 'nope' } })).toMatchObject({ ok: false });
    expect(spec.parse({ action: 'decline' })).toEqual({ ok: true, answer: { action: 'decline' } });
    expect(spec.parse({ action: 'maybe' })).toMatchObject({ ok: false });
    expect(spec.parse('garbage')).toMatchObject({ ok: false });
  });

  it('keeps only the fields a form schema knows: a junk field cannot ride along', () => {
    const spec = form({ message: 'ticket', schema: z.object({ ticket: z.string().max(64) }) });
    const parsed = spec.parse({ action: 'accept', content: { ticket: 'CHG-1', junk: 'x'.repeat(20_000) } });
    expect(parsed).toEqual({ ok: true, answer: { action: 'accept', content: { ticket: 'CHG-1' } } });
  });

  it('advertises a string limit as maxLength and names it, not the value, when an answer passes it', () => {
    const spec = form({ message: 'ticket', schema: z.object({ ticket: z.string().min(1).max(64) }) });
    const wire = spec.build({});
    expect(wire).toMatchObject({
      params: { requestedSchema: { properties: { ticket: { type: 'string', minLength: 1, maxLength: 64 } } } },
    });
    const long = 'Q'.repeat(13_000);
    const parsed = spec.parse({ action: 'accept', content: { ticket: long } });
    expect(parsed).toEqual({
      ok: false,
      problem: 'ticket: at most 64 characters',
      issues: [{ field: 'ticket', hint: 'at most 64 characters' }],
    });
    expect(spec.build({}, 'Your previous answer was not accepted.')).toMatchObject({
      params: { message: 'Your previous answer was not accepted.\n\nticket' },
    });
  });

  it('bounds sampling and roots answers, refusing an oversized one before parsing it', () => {
    const draft = sampling({ params: { messages: [], maxTokens: 10 }, maxLength: 1000 });
    const answer = (text: string) => ({ role: 'assistant', content: { type: 'text', text }, model: 'm' });
    expect(draft.oversized(answer('fine'))).toBeUndefined();
    expect(draft.parse(answer('fine'))).toMatchObject({ ok: true });
    expect(draft.oversized(answer('x'.repeat(22_000)))).toMatch(/22,0\d\d characters long; at most 1,000/);
    expect(draft.parse(answer('x'.repeat(22_000)))).toMatchObject({ ok: false });

    const workspace = roots({ maxRoots: 3 });
    const list = (n: number) => ({ roots: Array.from({ length: n }, (_, i) => ({ uri: `file:///r${i}` })) });
    expect(workspace.oversized(list(3))).toBeUndefined();
    expect(workspace.oversized(list(2000))).toBe('the client listed 2,000 roots; at most 3 are accepted');
    expect(workspace.parse({ roots: [{ uri: 'file:///a', junk: 'x'.repeat(5000) }] })).toEqual({
      ok: true,
      answer: { action: 'accept', roots: [{ uri: 'file:///a' }] },
    });
    expect(roots().oversized({ roots: [{ uri: `file:///${'x'.repeat(9000)}` }] })).toMatch(/at most 8,000/);
    expect(() => roots({ maxRoots: 0 })).toThrow(FlowDefinitionError);
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
    expect(spec.parse({ action: 'accept' })).toEqual({ ok: true, answer: { action: 'accept' } });
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
