/**
 * The official MCP conformance suite's client scenarios against `baton call`: runs
 * `scripts/conformance-client.ts` (the pinned suite on Node 22 from `.tmp/conformance`, which
 * `pnpm conformance` installs; each scenario's mock server and authorization server on loopback,
 * each scenario's `baton call` command lines as real CLI processes) and asserts that every
 * scenario of `CLIENT_SCENARIOS` passed, by name, and that the run's table is the client
 * section of the committed `docs/conformance.md`.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLIENT_SCENARIOS, CLIENT_SECTION } from '../scripts/conformance-client.js';
import { expectCommittedTable, expectEveryScenarioPassed, runHarness } from './helpers/conformanceHarness.js';
import { scratchDir } from './helpers/e2eLedgers.js';

const TEN_MINUTES = 600_000;

/** The 8 protocol scenarios and the 25 `auth/*` ones of 2026-07-28: a scenario dropped from the harness fails here. */
const EXPECTED = [...CLIENT_SCENARIOS];

const dir = scratchDir('conformance-client');

describe('official MCP conformance suite, client scenarios', () => {
  it(
    `passes all ${EXPECTED.length} client scenarios (2026-07-28, auth included) with baton call`,
    async () => {
      expect(EXPECTED).toHaveLength(33);
      const table = join(dir, 'conformance.md');
      const run = await runHarness('scripts/conformance-client.ts', ['--table', table, '--cli', 'built']);
      expectEveryScenarioPassed(run, EXPECTED);
      expectCommittedTable(table, CLIENT_SECTION);
    },
    TEN_MINUTES,
  );
});
