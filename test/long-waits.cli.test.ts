/**
 * `baton serve` checks long waits at start-up: a flows module whose flow
 * waits 25 hours, served with `--max-ttl 3600`, fails with exactly one line
 * on stderr naming the flow, the state and both durations, and a non-zero
 * exit; the same module with the default cap (30 days) starts.
 */
import { generateKey } from '@baton/engine';
import { describe, expect, it } from 'vitest';
import { runCli, startServe } from './helpers/mcpClients.js';

const FLOWS = 'test/fixtures/long-waits/index.ts';
const env = { BATON_KEYS: generateKey() };

describe('baton serve with a flow that waits longer than --max-ttl', () => {
  it('fails at start-up with one clear line and exit code 1', async () => {
    const result = await runCli(['serve', FLOWS, '--http', '127.0.0.1:0', '--max-ttl', '3600'], env);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^baton: flow "slow_sign_off": state "awaitingSignOff" waits up to 1 day 1 hour, longer than the longest state lifetime \(--max-ttl 1 hour, maxTtlSeconds 3600\); raise --max-ttl to at least 1 day 1 hour 5 minutes \(90300 seconds\)/,
    );
    expect(result.stderr).not.toMatch(/\bat .+:\d+:\d+/);
    expect(result.code).not.toBe(0);
    expect(result.code).toBe(1);
  });

  it('starts with the default --max-ttl (30 days)', async () => {
    const serve = await startServe([FLOWS, '--http', '127.0.0.1:0'], env);
    try {
      expect(serve.url.pathname).toBe('/mcp');
    } finally {
      await serve.stop();
    }
  });
});
