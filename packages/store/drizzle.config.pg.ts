/**
 * drizzle-kit configuration for the PostgreSQL migrations. Regenerate after a
 * schema change with `pnpm --filter @baton/store db:generate` (both dialects)
 * and commit the new files under `drizzle/pg`.
 */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/schema/pg.ts',
  out: './drizzle/pg',
});
