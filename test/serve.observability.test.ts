/**
 * `baton serve --audit --inspect`: a flow run over real HTTP by the SDK client
 * leaves one audit entry per round on the ledger's SQLite database, and the
 * inspector module sees every round of the run under one stable session.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAuditLog } from '@baton/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHttp,
  expectInputRequired,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-observability-'));
const ledgerUrl = `sqlite:${join(dir, 'ledger.db')}`;
const inspectFile = join(dir, 'inspect.jsonl');
let server: ServeProcess;

beforeAll(async () => {
  server = await startServe(
    [
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      ledgerUrl,
      '--audit',
      '--inspect',
      'test/fixtures/inspector/index.ts',
    ],
    { BATON_KEYS: randomBytes(32).toString('base64url'), BATON_TEST_INSPECT_FILE: inspectFile },
  );
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('baton serve --audit --inspect', () => {
  it('records each round and reports the run under one inspection session', async () => {
    const { client } = await connectHttp(server.url);
    const args = { version: '4.2.0' };
    const first = expectInputRequired(await toolRound(client, { name: 'deploy_production', arguments: args }));
    const done = await toolRound(client, {
      name: 'deploy_production',
      arguments: args,
      requestState: first.requestState,
      inputResponses: {
        confirm_deploy: { action: 'accept', content: { confirm: true } },
        change_ticket: { action: 'accept', content: { ticket: 'CHG-42' } },
      },
    });
    expect(textOf(done as { content?: unknown })).toContain('Deployed 4.2.0');
    await client.close();

    const audit = await openAuditLog(ledgerUrl);
    try {
      const [instance] = await audit.instances({ flow: 'deploy_production' });
      expect(instance).toMatchObject({ flow: 'deploy_production', rounds: 2, lastOutcome: 'complete' });
      const rounds = await audit.rounds(instance!.fid);
      expect(rounds.map((r) => [r.round, r.before, r.after, r.outcome])).toEqual([
        [1, null, 'awaitingApproval', 'input_required'],
        [2, 'awaitingApproval', 'deployed', 'complete'],
      ]);
      expect(rounds[1]!.received.map((a) => `${a.key}:${a.action}`)).toEqual([
        'confirm_deploy:accept',
        'change_ticket:accept',
      ]);
      expect(JSON.stringify(rounds)).not.toContain('CHG-42');

      const lines = readFileSync(inspectFile, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const roots = new Set(lines.map((l) => l.root));
      expect(roots).toEqual(new Set([`baton:${instance!.fid}`]));
      const events = lines.filter((l) => l.type === '@xstate.event').map((l) => l.event);
      expect(events).toContain('input.confirm_deploy');
      expect(events).toContain('input.change_ticket');
    } finally {
      await audit.close();
    }
  });

  it('refuses --audit without --ledger in one line', async () => {
    const { runCli } = await import('./helpers/mcpClients.js');
    const result = await runCli(['serve', 'examples/approvals', '--stdio', '--audit']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('--audit');
  });
});
