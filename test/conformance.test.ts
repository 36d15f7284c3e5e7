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
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCENARIOS, SERVER_SECTION } from '../scripts/conformance.js';
import { CONFORMANCE_PAGE, readSection } from '../scripts/lib/conformanceSuite.js';
import { runHarness, verdictsOf } from './helpers/conformanceHarness.js';
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
        const { code, output } = await runHarness('scripts/conformance.ts', ['--ledger', ledger.url, '--table', table]);
        const verdicts = verdictsOf(output);
        const report = `\n${output}`;
        expect([...verdicts.keys()].sort(), report).toEqual([...EXPECTED].sort());
        expect(
          [...verdicts].filter(([, verdict]) => verdict !== 'PASS').map(([scenario]) => scenario),
          report,
        ).toEqual([]);
        expect(output, report).toMatch(
          new RegExp(`^RESULT: ${EXPECTED.length}/${EXPECTED.length} scenarios passed, 0 failed`, 'm'),
        );
        expect(code, report).toBe(0);
        if (name === 'SQLite') {
          expect(
            readSection(readFileSync(table, 'utf8'), SERVER_SECTION),
            'docs/conformance.md is not the table of this run: pnpm conformance:docs',
          ).toBe(readSection(readFileSync(CONFORMANCE_PAGE, 'utf8'), SERVER_SECTION));
        }
      } finally {
        await ledger.drop();
      }
    },
    TEN_MINUTES,
  );
});
