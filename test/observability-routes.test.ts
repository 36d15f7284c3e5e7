/**
 * `createObservabilityRoutes` on its own, with a memory ledger whose ping is
 * made to hang or fail: a ping that never answers becomes 503 once the bound
 * passes (the probe is never left hanging), concurrent probes share one ping,
 * a failed ping is not cached past `pingCacheMs`, and before the ledger is
 * open the answer is 503 `starting`.
 */
import { createObservabilityRoutes, type LedgerSource, ServingMetrics } from '@baton/adapters';
import type { FullLedger } from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import { describe, expect, it } from 'vitest';

const get = (path: string) => new Request(`http://127.0.0.1${path}`);

function routes(ledger: FullLedger | undefined, options: { pingTimeoutMs?: number; pingCacheMs?: number } = {}) {
  let source: LedgerSource = ledger ? { ready: true, ledger } : { ready: true };
  const map = createObservabilityRoutes({ metrics: new ServingMetrics(), ledger: () => source, ...options });
  return { healthz: map.get('/healthz')!, metrics: map.get('/metrics')!, set: (s: LedgerSource) => (source = s) };
}

describe('createObservabilityRoutes', () => {
  it('answers 503 when the ping does not answer within its bound, and shares one ping between probes', async () => {
    const ledger = createMemoryLedger({ pruneIntervalMs: 0 });
    let pings = 0;
    ledger.health.ping = () => {
      pings++;
      return new Promise<void>(() => {});
    };
    const { healthz } = routes(ledger, { pingTimeoutMs: 50, pingCacheMs: 0 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => healthz(get('/healthz'))));
    expect(answers.map((r) => r.status)).toEqual([503, 503, 503, 503, 503]);
    expect(await answers[0]!.json()).toEqual({ status: 'unavailable', reason: 'ledger_unavailable' });
    expect(pings).toBe(1);
    await ledger.close();
  });

  it('pings again once the cached answer is older than pingCacheMs', async () => {
    const ledger = createMemoryLedger({ pruneIntervalMs: 0 });
    let fail = true;
    ledger.health.ping = async () => {
      if (fail) throw new Error('down');
    };
    const { healthz, metrics } = routes(ledger, { pingCacheMs: 0 });
    expect((await healthz(get('/healthz'))).status).toBe(503);
    expect(await (await metrics(get('/metrics'))).text()).toContain('baton_ledger_up 0\n');
    fail = false;
    const ok = await healthz(get('/healthz'));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ status: 'ok', ledger: { driver: 'memory' } });
    await ledger.close();
  });

  it('answers 503 starting before the ledger is open, 200 with ledger null without one', async () => {
    const r = routes(undefined);
    r.set({ ready: false });
    const starting = await r.healthz(get('/healthz'));
    expect(starting.status).toBe(503);
    expect(await starting.json()).toEqual({ status: 'unavailable', reason: 'starting' });
    r.set({ ready: true });
    const none = await r.healthz(get('/healthz'));
    expect(none.status).toBe(200);
    expect(await none.json()).toMatchObject({ status: 'ok', ledger: null });
    expect((await r.healthz(new Request('http://127.0.0.1/healthz', { method: 'DELETE' }))).status).toBe(405);
    const head = await r.healthz(new Request('http://127.0.0.1/healthz', { method: 'HEAD' }));
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
  });
});
