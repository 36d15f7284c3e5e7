/**
 * The official MCP conformance suite against `baton serve`: runs
 * `scripts/conformance.ts` (which installs the pinned suite and a Node 22 into
 * `.tmp/conformance/` on first use, serves `test/conformance/fixtures.ts` on a
 * free loopback port, and runs every server scenario of the 2026-07-28 revision
 * and the Tasks extension) once with a SQLite ledger and once with PostgreSQL
 * (a database of its own on the suite's cluster), and asserts that every
 * scenario passed. The SQLite run also writes the Markdown table, which must be
 * the server section of the committed `docs/conformance.md` (regenerate it
 * with `pnpm conformance:docs`).
 */
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { SCENARIOS, SERVER_SECTION } from '../scripts/conformance.js';
import { expectCommittedTable, expectEveryScenarioPassed, runHarness } from './helpers/conformanceHarness.js';
import { e2eLedgers, ledgerOfItsOwn, scratchDir } from './helpers/e2eLedgers.js';

const TEN_MINUTES = 600_000;

/**
 * Every server scenario the harness runs (`SCENARIOS` in scripts/conformance.ts, 50 of
 * @modelcontextprotocol/conformance 0.2.0-alpha.12): asserted here by name, so a scenario
 * dropped from the harness fails this test.
 */
const EXPECTED = [...SCENARIOS];

const dir = scratchDir('conformance');

describe.each(e2eLedgers(dir))('official MCP conformance suite on %s', (name, given) => {
  it.skipIf(!given)(
    `passes all ${EXPECTED.length} server scenarios (2026-07-28 and Tasks) against baton serve`,
    async () => {
      const ledger = await ledgerOfItsOwn(name, given!);
      const table = join(dir, `conformance-${name}.md`);
      try {
        const run = await runHarness('scripts/conformance.ts', [
          '--ledger',
          ledger.url,
          '--table',
          table,
          '--cli',
          'built',
        ]);
        expectEveryScenarioPassed(run, EXPECTED);
        if (name === 'SQLite') expectCommittedTable(table, SERVER_SECTION);
      } finally {
        await ledger.drop();
      }
    },
    TEN_MINUTES,
  );
});
