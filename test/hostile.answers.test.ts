/**
 * Hostile answers and arguments over real HTTP (issue 11, items 2.1, 2.3 and
 * 2.12), against an in-process `serveHttp` whose runner redeems every state in
 * a real SQLite ledger: an answer or argument too large for the next state, a
 * junk field riding on a valid answer, answers smuggled in as `__proto__`, and
 * a confirmation answered before it was shown. Every hostile request must get
 * a sentence the person can act on (never "Internal error"), and afterwards
 * the server must still answer and the same flow instance must complete with
 * corrected input. The official SDK client drives the rounds; the
 * `__proto__` case is raw JSON-RPC, since the client would not send it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFlowServerFactory, type HttpServing, serveHttp } from '@baton/adapters';
import { createKeyRing, createRequestStateCodec, createRunner, type FullLedger, generateKey } from '@baton/engine';
import flows from '@baton/examples/approvals';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deployFlow as unboundedDeploy } from '../packages/engine/test/fixtures/deployFlow.js';
import { connectHttp, expectInputRequired, protocolError, textOf, toolRound } from './helpers/mcpClients.js';

const keys = createKeyRing([generateKey()]);
let dir: string;
let ledger: FullLedger;
/** The example flows. */
let examples: HttpServing;
/** The engine's test deploy flow: no size limits on its ticket or version, so only the state cap stops them. */
let unbounded: HttpServing;
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-hostile-'));
  ledger = createSqliteLedger({ path: join(dir, 'ledger.db'), pruneIntervalMs: 0 });
  const codec = createRequestStateCodec({ keys });
  examples = await serveHttp({
    factory: createFlowServerFactory({ runner: createRunner({ flows, ledger, codec, holdMs: 50 }) }),
    host: '127.0.0.1',
    port: 0,
  });
  unbounded = await serveHttp({
    factory: createFlowServerFactory({ runner: createRunner({ flows: [unboundedDeploy], ledger, codec }) }),
    host: '127.0.0.1',
    port: 0,
  });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await examples.close();
  await unbounded.close();
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

async function connect(serving: HttpServing = examples) {
  const { client } = await connectHttp(serving.url);
  clients.push(client);
  return client;
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const deploy = (version: string) => ({ name: 'deploy_production', arguments: { version } });
const messageOf = (request: unknown) => String((request as { params?: { message?: string } }).params?.message);

/** A completed, non-error tool result as text. */
function completedText(result: unknown): string {
  const r = result as { resultType?: string; isError?: boolean; content?: unknown };
  expect(r.resultType ?? 'complete').toBe('complete');
  expect(r.isError, textOf(r)).toBeFalsy();
  return textOf(r);
}

/** A tool error result (`isError`) as text: a sentence, not a JSON-RPC error. */
function toolErrorText(result: unknown): string {
  const r = result as { isError?: boolean; content?: unknown };
  expect(r.isError).toBe(true);
  return textOf(r);
}

/** The server still answers a fresh call quickly. */
async function stillServes(client: Client) {
  const first = expectInputRequired(await toolRound(client, deploy('0.0.1')));
  expect(Object.keys(first.inputRequests ?? {})).toEqual(['confirm_deploy', 'change_ticket']);
}

describe('an answer or argument too large for the next state (2.1)', () => {
  it('asks a 13 kB change ticket again, with the limit, while the confirmation is still missing', async () => {
    const client = await connect();
    const first = expectInputRequired(await toolRound(client, deploy('6.0.0')));
    const schema = (first.inputRequests!.change_ticket as { params: { requestedSchema: unknown } }).params
      .requestedSchema;
    expect(schema).toMatchObject({ properties: { ticket: { type: 'string', maxLength: 64 } } });

    const second = expectInputRequired(
      await toolRound(client, {
        ...deploy('6.0.0'),
        requestState: first.requestState,
        inputResponses: { change_ticket: accept({ ticket: `CHG-${'7'.repeat(13_000)}` }) },
      }),
    );
    expect(Object.keys(second.inputRequests ?? {})).toEqual(['confirm_deploy', 'change_ticket']);
    expect(messageOf(second.inputRequests!.change_ticket)).toContain('ticket: at most 64 characters');
    expect(messageOf(second.inputRequests!.confirm_deploy)).not.toContain('not accepted');

    await stillServes(client);
    const done = await toolRound(client, {
      ...deploy('6.0.0'),
      requestState: second.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-60' }) },
    });
    expect(completedText(done)).toContain('Deployed 6.0.0 to production (change ticket CHG-60)');
  });

  it('holds only the fields a schema knows: a 13 kB junk field beside a valid ticket is dropped', async () => {
    const client = await connect();
    const first = expectInputRequired(await toolRound(client, deploy('6.1.0')));
    const second = expectInputRequired(
      await toolRound(client, {
        ...deploy('6.1.0'),
        requestState: first.requestState,
        inputResponses: { change_ticket: accept({ ticket: 'CHG-61', junk: 'j'.repeat(13_000) }) },
      }),
    );
    expect(Object.keys(second.inputRequests ?? {})).toEqual(['confirm_deploy']);
    expect(second.requestState.length).toBeLessThan(2000);
    const done = await toolRound(client, {
      ...deploy('6.1.0'),
      requestState: second.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }) },
    });
    expect(completedText(done)).toContain('change ticket CHG-61');
  });

  it('refuses a 20 kB version argument with the limit; a corrected call works', async () => {
    const client = await connect();
    const refused = toolErrorText(await toolRound(client, deploy('9'.repeat(20_000))));
    expect(refused).toContain('version');
    expect(refused).toContain('64 characters');
    await stillServes(client);
  });

  const notesCall = { name: 'draft_release_notes', arguments: { version: '7.0.0' } };
  const draft = (text: string) => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-model' });

  it('refuses a 22 kB model draft without using up the state; the same state takes a shorter draft', async () => {
    const client = await connect();
    const first = expectInputRequired(await toolRound(client, notesCall));
    expect(Object.keys(first.inputRequests ?? {})).toEqual(['workspace']);
    const second = expectInputRequired(
      await toolRound(client, {
        ...notesCall,
        requestState: first.requestState,
        inputResponses: { workspace: { roots: [{ uri: 'file:///repo', name: 'repo' }] } },
      }),
    );
    expect(Object.keys(second.inputRequests ?? {})).toEqual(['draft']);
    const tooLong = {
      ...notesCall,
      requestState: second.requestState,
      inputResponses: { draft: draft('d'.repeat(22_000)) },
    };
    const refused = toolErrorText(await toolRound(client, tooLong));
    expect(refused).toContain('"draft"');
    expect(refused).toContain('at most 4,000');
    // Refused before redemption: the same request again gets the same sentence, not "replayed".
    expect(toolErrorText(await toolRound(client, tooLong))).toBe(refused);

    await stillServes(client);
    const third = expectInputRequired(
      await toolRound(client, {
        ...notesCall,
        requestState: second.requestState,
        inputResponses: { draft: draft('Fixed bugs.') },
      }),
    );
    expect(Object.keys(third.inputRequests ?? {})).toEqual(['publish']);
    const done = await toolRound(client, {
      ...notesCall,
      requestState: third.requestState,
      inputResponses: { publish: accept({ publish: true }) },
    });
    expect(completedText(done)).toContain('Published release notes:\nFixed bugs.');
  });

  it('refuses 2,000 roots without using up the state; the same state takes a shorter list', async () => {
    const client = await connect();
    const first = expectInputRequired(await toolRound(client, notesCall));
    const many = Array.from({ length: 2000 }, (_, i) => ({ uri: `file:///work/project-${i}`, name: `project-${i}` }));
    const refused = toolErrorText(
      await toolRound(client, {
        ...notesCall,
        requestState: first.requestState,
        inputResponses: { workspace: { roots: many } },
      }),
    );
    expect(refused).toContain('"workspace"');
    expect(refused).toContain('2,000 roots; at most 50');

    await stillServes(client);
    const second = expectInputRequired(
      await toolRound(client, {
        ...notesCall,
        requestState: first.requestState,
        inputResponses: { workspace: { roots: many.slice(0, 2) } },
      }),
    );
    expect(Object.keys(second.inputRequests ?? {})).toEqual(['draft']);
    expect(JSON.stringify(second.inputRequests!.draft)).toContain('project-0, project-1');
  });

  describe('without declared limits, the state cap itself', () => {
    const call = (version: string) => ({ name: 'deploy_production', arguments: { version } });

    it('asks the previous questions again from the previous state, naming the answer and the limit', async () => {
      const client = await connect(unbounded);
      const first = expectInputRequired(await toolRound(client, call('8.0.0')));
      const huge = { change_ticket: accept({ ticket: `CHG-${'1'.repeat(13_000)}` }) };
      const again = expectInputRequired(
        await toolRound(client, { ...call('8.0.0'), requestState: first.requestState, inputResponses: huge }),
      );
      expect(Object.keys(again.inputRequests ?? {})).toEqual(['confirm_deploy', 'change_ticket']);
      for (const request of Object.values(again.inputRequests ?? {})) {
        expect(messageOf(request)).toMatch(
          /^The answer to "change_ticket" is too large \(13,0\d\d characters\): the flow's state would be [\d,]+ characters, over its limit of 16,384\. Nothing was saved: shorten it and answer again\./,
        );
      }
      // Same state, other answers: the ledger refuses the replay.
      const replay = await protocolError(
        toolRound(client, {
          ...call('8.0.0'),
          requestState: first.requestState,
          inputResponses: { change_ticket: accept({ ticket: 'CHG-1' }) },
        }),
      );
      expect(replay).toMatchObject({ code: -32602, data: { reason: 'replayed' } });

      const done = await toolRound(client, {
        ...call('8.0.0'),
        requestState: again.requestState,
        inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-80' }) },
      });
      expect(completedText(done)).toBe('Deployed 8.0.0 (ticket CHG-80)');
    });

    it('ends a first call with a sentence naming the argument and the limit', async () => {
      const client = await connect(unbounded);
      const refused = toolErrorText(await toolRound(client, call('9'.repeat(20_000))));
      expect(refused).toMatch(
        /^The argument "version" is too large \(20,002 characters\): the flow's state would be [\d,]+ characters, over its limit of 16,384\. Nothing was saved: shorten it and call the tool again\.$/,
      );
      const first = expectInputRequired(await toolRound(client, call('9.0.0')));
      const done = await toolRound(client, {
        ...call('9.0.0'),
        requestState: first.requestState,
        inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-90' }) },
      });
      expect(completedText(done)).toBe('Deployed 9.0.0 (ticket CHG-90)');
    });
  });
});

describe('answers smuggled as __proto__ (2.3)', () => {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': 'deploy_production',
  };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  };
  let id = 0;

  /** A raw `tools/call` whose `inputResponses` is written as JSON text, so it can hold a `__proto__` member. */
  async function rawCall(requestState: string, inputResponsesJson: string) {
    const params = { name: 'deploy_production', arguments: { version: '10.0.0' }, requestState, _meta: meta };
    const text = JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params });
    const body = `${text.slice(0, -2)},"inputResponses":${inputResponsesJson}}}`;
    const response = await fetch(examples.url, { method: 'POST', headers, body });
    expect(response.status).toBe(200);
    return (await response.json()) as { result?: any; error?: { code: number; data?: { reason?: string } } };
  }

  it('delivers nothing from the prototype, and a replay with other answers is -32602', async () => {
    const client = await connect();
    const first = expectInputRequired(await toolRound(client, deploy('10.0.0')));
    const smuggled = JSON.stringify({
      confirm_deploy: accept({ confirm: true }),
      change_ticket: accept({ ticket: 'CHG-666' }),
    });
    const answered = await rawCall(first.requestState, `{"__proto__":${smuggled}}`);
    expect(answered.error).toBeUndefined();
    // Not delivered: both questions are asked again.
    expect(answered.result).toMatchObject({ resultType: 'input_required' });
    expect(Object.keys(answered.result.inputRequests)).toEqual(['confirm_deploy', 'change_ticket']);

    // The same state with answers that differ from what was delivered (nothing): replayed.
    const replay = await rawCall(
      first.requestState,
      JSON.stringify({ confirm_deploy: accept({ confirm: false }), change_ticket: accept({ ticket: 'CHG-1' }) }),
    );
    expect(replay.error).toMatchObject({ code: -32602, data: { reason: 'replayed' } });

    await stillServes(client);
    const done = await toolRound(client, {
      ...deploy('10.0.0'),
      requestState: answered.result.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-100' }) },
    });
    expect(completedText(done)).toContain('Deployed 10.0.0 to production (change ticket CHG-100)');
  });
});

describe('answers sent ahead (2.12)', () => {
  it('shows the deploy confirmation (with its plan) even when a first call already answers it', async () => {
    const client = await connect();
    const ahead = expectInputRequired(
      await toolRound(client, {
        ...deploy('11.0.0'),
        inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-110' }) },
      }),
    );
    // The confirmation is asked, naming the plan; the ticket sent ahead is held.
    expect(Object.keys(ahead.inputRequests ?? {})).toEqual(['confirm_deploy']);
    expect(messageOf(ahead.inputRequests!.confirm_deploy)).toBe(
      'Deploy 11.0.0 to production? Plan: rolling update of 3 instances to 11.0.0.',
    );
    await stillServes(client);
    const done = await toolRound(client, {
      ...deploy('11.0.0'),
      requestState: ahead.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }) },
    });
    expect(completedText(done)).toBe('Deployed 11.0.0 to production (change ticket CHG-110).');
  });

  it('never takes a decision sent ahead by its requester (four eyes): the round waits on the manager', async () => {
    const client = await connect();
    const waiting = expectInputRequired(
      await toolRound(client, {
        name: 'expense_approval',
        arguments: { amount: 120, purpose: 'books' },
        inputResponses: { manager_approval: accept({ approve: true }) },
      }),
    );
    expect(waiting.inputRequests ?? {}).toEqual({});
  });
});
