/**
 * The `prepack` step of the three published packages: refuse to pack with
 * anything but pnpm, then build the package with tsdown. Only pnpm turns the
 * workspace manifest into the published one: it rewrites `workspace:*`
 * versions and applies `publishConfig` (the `exports` and `bin` of the built
 * `dist/`, where the workspace's own point at `src/`). `npm pack` or
 * `npm publish` would ship a package that cannot load.
 */
import { spawnSync } from 'node:child_process';

const agent = process.env.npm_config_user_agent ?? '';
if (!agent.startsWith('pnpm/')) {
  console.error(
    `prepack: pack and publish Baton's packages with pnpm (pnpm pack, pnpm publish), not "${agent.split(' ')[0] || 'unknown'}": only pnpm applies publishConfig and rewrites workspace:* versions`,
  );
  process.exit(1);
}
const build = spawnSync('tsdown', ['--log-level', 'warn'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(build.status ?? 1);
