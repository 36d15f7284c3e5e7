/**
 * Refused answers are asked again with a hint that says, in words, what was
 * wrong (never the value given): for every kind of form field problem (type,
 * enum, bounds, missing, format) in the re-asked form's message, for a URL
 * elicitation's message, and for sampling and roots (whose requests show the
 * user no text) in the re-asked request's `_meta` (`baton/refused`), for the
 * client. Real rounds through the test kit.
 */

import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { ask, defineFlow, defineInputs, form, type InputEvents, roots, sampling, url } from '../src/index.js';
import { createFlowTester } from '../src/testing/index.js';

const inputs = defineInputs({
  details: form({
    message: 'Details?',
    schema: z.object({
      count: z.number().int().min(1).max(10),
      level: z.enum(['low', 'high']),
      note: z.string().min(2).max(20),
      confirm: z.boolean(),
      email: z.email().optional(),
      ticket: z
        .string()
        .regex(/^CHG-\d+$/, 'a ticket looks like CHG-123')
        .optional(),
    }),
  }),
  login: url({ message: 'Sign in', url: 'https://example.test/login' }),
  summary: sampling({
    params: { messages: [{ role: 'user', content: { type: 'text', text: 'Sum up' } }], maxTokens: 9 },
  }),
  workspace: roots(),
});

const flow = defineFlow({
  name: 'reasks',
  description: 'asks every kind',
  args: z.object({}),
  inputs,
  machine: setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
    initial: 'asking',
    states: {
      asking: { meta: ask(inputs, 'details', 'login', 'summary', 'workspace'), on: { 'input.details': 'done' } },
      done: { type: 'final' },
    },
  }),
});

const HINT = 'Your previous answer was not accepted (';

async function reask(content: unknown): Promise<string> {
  const run = await createFlowTester(flow).start({});
  await run.answerRaw({ details: { action: 'accept', content } });
  expect(run.asked).toContain('details');
  const { params } = run.request('details') as { params: { message: string } };
  expect(params.message).toContain(HINT);
  expect(params.message).toContain('Details?');
  return params.message.slice(HINT.length, params.message.indexOf(').'));
}

const valid = { count: 3, level: 'low', note: 'ok', confirm: true };

describe('a refused answer is asked again with a hint', () => {
  it('names a field of the wrong type', async () => {
    expect(await reask({ ...valid, count: 'seven', confirm: 'yes', note: 4 })).toBe(
      'count: must be a number; note: must be text; confirm: must be true or false',
    );
    expect(await reask({ ...valid, count: 2.5 })).toBe('count: must be a whole number');
  });

  it('lists the allowed values of an enum', async () => {
    expect(await reask({ ...valid, level: 'medium' })).toBe('level: must be one of "low", "high"');
  });

  it('states the bounds, never the value', async () => {
    expect(await reask({ ...valid, count: 0, note: 'x' })).toBe('count: at least 1; note: at least 2 characters');
    const hint = await reask({ ...valid, count: 11, note: 'a very long note indeed, really' });
    expect(hint).toBe('count: at most 10; note: at most 20 characters');
    expect(hint).not.toContain('really');
  });

  it('says which required fields are missing', async () => {
    expect(await reask({ note: 'ok' })).toBe('count: required; level: required; confirm: required');
    expect(await reask(undefined)).toBe('count: required; level: required; note: required; confirm: required');
  });

  it("words formats, and keeps an author's message", async () => {
    expect(await reask({ ...valid, email: 'nope', ticket: 'T-1' })).toBe(
      'email: must be an email address; ticket: a ticket looks like CHG-123',
    );
  });

  it('tells a URL elicitation what was wrong', async () => {
    const run = await createFlowTester(flow).start({});
    await run.answerRaw({ login: { action: 'done' } });
    expect(run.request('login')).toMatchObject({
      params: {
        message:
          'Your previous answer was not accepted (action: must be "accept", "decline" or "cancel"). Please answer again.\n\nSign in',
      },
    });
  });

  it('refuses sampling and roots answers with a readable problem and asks again', async () => {
    expect(inputs.summary.parse({ role: 'bot', content: { text: 'hi' } })).toEqual({
      ok: false,
      problem: 'role: must be one of "user", "assistant"; content.type: required; model: required',
    });
    expect(inputs.workspace.parse({ roots: [{ uri: 'file:///w' }, { name: 2 }] })).toEqual({
      ok: false,
      problem: 'roots[1].uri: required; roots[1].name: must be text',
    });
    expect(inputs.workspace.parse({})).toEqual({ ok: false, problem: 'roots: required' });
    const run = await createFlowTester(flow).start({});
    expect(run.request('workspace')).toEqual({ method: 'roots/list' });
    expect(run.request('summary')).not.toHaveProperty('params._meta');
    await run.answerRaw({ summary: { role: 'bot' }, workspace: { roots: 'all' } });
    expect(run.asked).toEqual(['details', 'login', 'summary', 'workspace']);
    // Their requests show the user no text: the hint is in `_meta`, for the client.
    expect(run.request('workspace')).toEqual({
      method: 'roots/list',
      params: {
        _meta: {
          'baton/refused': 'Your previous answer was not accepted (roots: must be a list). Please answer again.',
        },
      },
    });
    expect(run.request('summary')).toEqual({
      method: 'sampling/createMessage',
      params: {
        messages: [{ role: 'user', content: { type: 'text', text: 'Sum up' } }],
        maxTokens: 9,
        _meta: {
          'baton/refused':
            'Your previous answer was not accepted (role: must be one of "user", "assistant"; content: required; model: required). Please answer again.',
        },
      },
    });
    // Answered correctly, they are asked no more.
    await run.answerRaw({
      summary: { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'm' },
      workspace: { roots: [] },
    });
    expect(run.asked).toEqual(['details', 'login']);
  });
});
