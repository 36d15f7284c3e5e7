/**
 * How `npm run serve` serves this project: `baton serve` reads this file from
 * the current folder. A flag wins over a BATON_* environment variable, which
 * wins over this file; `npx baton serve --print-config` shows what applies and
 * where each value came from. Secrets (keys, webhook secrets, passwords) stay
 * out of this file: put them in the environment or in files it names.
 */
import { defineConfig } from '@baton/adapters';

export default defineConfig({
  flows: './flows.ts',
  http: '127.0.0.1:3000',
  ledger: 'sqlite:./baton.db',
});
