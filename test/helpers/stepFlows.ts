/**
 * What the durable-step end-to-end tests share (`steps.e2e.test.ts` for the
 * ES-module fixture `test/fixtures/step-flows`, `cjs-steps.e2e.test.ts` for
 * the CommonJS package `test/fixtures/cjs-step-flows`): both serve the same
 * `charge_order` flow, whose step appends `<order> <idempotency key> <pid>`
 * to a log file the test owns. Here: reading those side effects, the
 * confirmation answer, the confirmed round that runs the step, and following
 * `baton_resume` until the flow completes.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import { expectInputRequired, sleep, textOf, toolRound } from './mcpClients.js';

/** The answer that confirms `charge_order`'s question. */
export const CONFIRM = { confirm: { action: 'accept', content: { confirm: true } } };

/** The side effects of `order` in the step log `log`: `[idempotency key, pid]` per execution of its step. */
export function stepEffects(log: string, order: string): [string, string][] {
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith(`${order} `))
    .map((line) => line.split(' ').slice(1) as [string, string]);
}

/** The confirmed round of a new `charge_order` instance on `c`: what to send (again) to run the step. */
export async function confirmedRound(c: Client, order: string, delayMs: number) {
  const args = { order, delayMs };
  const first = expectInputRequired(await toolRound(c, { name: 'charge_order', arguments: args }));
  return { name: 'charge_order', arguments: args, requestState: first.requestState, inputResponses: CONFIRM };
}

/** `baton_resume {id}` on `c` (following retry-later rounds) until the flow completes; its text. */
export async function continueUntilDone(c: Client, id: string, ms: number): Promise<string> {
  const until = Date.now() + ms;
  let state: string | undefined;
  while (Date.now() < until) {
    const result = (await toolRound(c, {
      name: 'baton_resume',
      arguments: { id },
      ...(state ? { requestState: state } : {}),
    })) as { resultType?: string; requestState?: string; structuredContent?: { status?: string } };
    if (result.resultType === 'input_required') {
      state = result.requestState;
      await sleep(250);
      continue;
    }
    state = undefined;
    if (result.structuredContent?.status === 'working') {
      await sleep(500);
      continue;
    }
    return textOf(result as { content?: unknown });
  }
  throw new Error(`request ${id} did not complete within ${ms} ms`);
}
