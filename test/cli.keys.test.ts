/**
 * Two `baton serve` instances on one SQLite ledger, started with different
 * `BATON_KEYS` (the first-hour mistake of issue 22): what each one says is
 * about keys, not corruption. The approver's inbox on the other instance
 * lists the request as sealed with a key id it does not have, `baton_decide`
 * refuses with the same sentence (a tool error), its log says so, a
 * requestState minted by the first instance is `-32602 unknown_key` on the
 * second (its log naming the key id), and `/healthz` lists each instance's
 * key ids (ids only, never a key). The log says such a request "cannot be
 * read here", never that its flow failed; an instance without `BATON_KEYS`
 * (a random per-process key) refuses to start on a ledger holding requests
 * sealed under other key ids (issue 35, item 8). Real processes, the SDK
 * client over loopback HTTP.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey, parseKeyRingEnv } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHttp,
  expectInputRequired,
  protocolError,
  runCli,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const KEY_A = generateKey();
const KEY_B = generateKey();
const KID_A = parseKeyRingEnv(KEY_A).current.kid;
const KID_B = parseKeyRingEnv(KEY_B).current.kid;
const ALICE = `alice-${'a'.repeat(20)}`;
const BOB = `bob-${'b'.repeat(20)}`;
const SENTENCE = `sealed with key id ${KID_A}, which this server does not have: start every instance with the same BATON_KEYS`;

describe('two instances with different BATON_KEYS on one ledger', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-keys-'));
  let a: ServeProcess | undefined;
  let b: ServeProcess | undefined;
  let id: string;

  beforeAll(async () => {
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ [ALICE]: 'alice', [BOB]: { principal: 'bob', roles: ['manager'] } }));
    const args = [
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      `sqlite:${join(dir, 'ledger.db')}`,
      '--auth-tokens',
      tokens,
      '--wait-in-call',
      '0',
    ];
    [a, b] = await Promise.all([startServe(args, { BATON_KEYS: KEY_A }), startServe(args, { BATON_KEYS: KEY_B })]);
    const { client } = await connectHttp(a.url, { token: ALICE });
    const waiting = await client.callTool({ name: 'expense_approval', arguments: { amount: 40, purpose: 'pens' } });
    id = (waiting.structuredContent as { id: string }).id;
    await client.close();
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the inbox and baton_decide name the key id; the log says the same', async () => {
    const { client } = await connectHttp(b!.url, { token: BOB });
    try {
      const inbox = await client.callTool({ name: 'baton_inbox', arguments: {} });
      expect(textOf(inbox)).toBe(
        `No decisions this server can read are waiting for you.\n1 decision cannot be read on this server:\n- Request ${id}, manager_approval (expense_approval): ${SENTENCE}`,
      );
      const decided = await client.callTool({ name: 'baton_decide', arguments: { id } });
      expect(decided.isError).toBe(true);
      expect(textOf(decided)).toBe(`Request ${id} was ${SENTENCE}.`);
    } finally {
      await client.close();
    }
    // Not a failure of the flow: the other instance's request cannot be read here.
    expect(b!.stderr()).toContain(`baton: request ${id} of expense_approval cannot be read here: it was ${SENTENCE}`);
    expect(b!.stderr()).not.toContain(`(${id}) failed`);
    expect(b!.stderr()).not.toContain('does not open or cannot be migrated');
  });

  it('a requestState from the other instance is -32602 unknown_key, its key id in the log', async () => {
    const alice = await connectHttp(a!.url, { token: ALICE });
    const onB = await connectHttp(b!.url, { token: ALICE });
    try {
      const args = { version: '9.9.9' };
      const first = expectInputRequired(await toolRound(alice.client, { name: 'deploy_production', arguments: args }));
      const refused = await protocolError(
        toolRound(onB.client, {
          name: 'deploy_production',
          arguments: args,
          requestState: first.requestState,
          inputResponses: { confirm_deploy: { action: 'accept', content: { confirm: true } } },
        }),
      );
      expect(refused.code).toBe(-32602);
      expect(refused.data).toEqual({ reason: 'unknown_key' });
    } finally {
      await Promise.all([alice.client.close(), onB.client.close()]);
    }
    // A state carries the first 4 bytes of the key id: the 5 characters they fix, then "…".
    expect(b!.stderr()).toContain(
      `rejected requestState for deploy_production: unknown_key (this state was sealed with key id ${KID_A.slice(0, 5)}…, which this server does not have: start every instance with the same BATON_KEYS)`,
    );
  });

  it('a third instance without BATON_KEYS (a random key) on this ledger refuses to start, in one line', async () => {
    const refused = await runCli(
      [
        'serve',
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        `sqlite:${join(dir, 'ledger.db')}`,
        '--auth-tokens',
        join(dir, 'tokens.json'),
      ],
      { BATON_KEYS: undefined },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr.trimEnd().split('\n')).toEqual([
      `baton: BATON_KEYS is not set, and the ledger holds requests sealed with key id ${KID_A} (request ${id}) that a random per-process key cannot read: start every instance on this ledger with the same BATON_KEYS ("baton keygen" makes one), or use another ledger`,
    ]);
  });

  it('/healthz lists each instance key ids, never a key', async () => {
    const health = async (server: ServeProcess) => (await fetch(new URL('/healthz', server.url))).text();
    const [onA, onB] = await Promise.all([health(a!), health(b!)]);
    expect(JSON.parse(onA).keyIds).toEqual([KID_A]);
    expect(JSON.parse(onB).keyIds).toEqual([KID_B]);
    for (const text of [onA, onB]) {
      expect(text).not.toContain(KEY_A);
      expect(text).not.toContain(KEY_B);
    }
  });
});
