/**
 * drizzle-kit configuration for the SQLite migrations. Regenerate after a
 * schema change with `pnpm --filter @baton/store db:generate` (both dialects)
 * and commit the new files under `drizzle/sqlite`.
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/schema/sqlite.ts',
  out: './drizzle/sqlite',
});
