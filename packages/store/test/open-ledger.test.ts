/** `parseLedgerUrl` / `openLedger`: the URL forms the CLI accepts, and clear errors for the rest. */
import { describe, expect, it } from 'vitest';
import { LedgerConnectionError, LedgerError, openLedger, parseLedgerUrl } from '../src/index.js';
import { newJti, T0 } from './helpers/contract/fixtures.js';

describe('parseLedgerUrl', () => {
  it.each([
    ['sqlite:./data/ledger.db', { kind: 'sqlite', path: './data/ledger.db' }],
    ['sqlite:ledger.db', { kind: 'sqlite', path: 'ledger.db' }],
    ['sqlite:/var/lib/baton/ledger.db', { kind: 'sqlite', path: '/var/lib/baton/ledger.db' }],
    ['sqlite:///var/lib/baton/ledger.db', { kind: 'sqlite', path: '/var/lib/baton/ledger.db' }],
    ['SQLITE:Ledger.db', { kind: 'sqlite', path: 'Ledger.db' }],
    ['memory:', { kind: 'memory' }],
    ['postgres://baton:pw@db:5432/baton', { kind: 'postgres', connectionString: 'postgres://baton:pw@db:5432/baton' }],
    [
      'postgresql://db/baton?sslmode=require',
      { kind: 'postgres', connectionString: 'postgresql://db/baton?sslmode=require' },
    ],
  ])('parses %s', (url, expected) => {
    expect(parseLedgerUrl(url)).toEqual(expected);
  });

  it.each(['', 'ledger.db', 'sqlite:', 'sqlite://', 'sqlite::memory:', 'mysql://db/baton', 'redis://localhost'])(
    'rejects %j with a LedgerError',
    (url) => {
      expect(() => parseLedgerUrl(url)).toThrow(LedgerError);
    },
  );

  it('lists the accepted forms and hides passwords', () => {
    expect(() => parseLedgerUrl('mysql://root:hunter2@db/baton')).toThrow(
      'Unsupported ledger URL "mysql://root:***@db/baton"; expected sqlite:PATH, postgres://..., postgresql://... or memory:',
    );
  });
});

describe('openLedger', () => {
  it('opens a memory ledger', async () => {
    const ledger = await openLedger('memory:');
    expect(
      await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: T0 + 1, now: T0 }),
    ).toEqual({
      status: 'redeemed',
    });
    await ledger.close();
  });

  it('fails fast on an unreachable PostgreSQL URL', async () => {
    await expect(openLedger('postgres://baton@127.0.0.1:1/baton')).rejects.toBeInstanceOf(LedgerConnectionError);
  });
});
