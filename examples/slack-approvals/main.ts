/**
 * Run the Slack-style receiver (`receiver.ts`) from environment variables:
 * `BATON_NOTIFY_SECRET` (the `--notify-secret` of `baton serve`), `BATON_URL`,
 * `SLACK_SIGNING_SECRET`, `SLACK_USER_TOKENS` (a JSON file: Slack user id ->
 * that person's Baton bearer token) and `PORT` (default 3100). Messages are
 * printed; replace `post` with Slack's `chat.postMessage` to send them.
 */
import { readFileSync } from 'node:fs';
import { createReceiver } from './receiver.js';

const need = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name}`);
  return value;
};

const receiver = createReceiver({
  batonSecret: need('BATON_NOTIFY_SECRET'),
  batonUrl: need('BATON_URL'),
  slackSigningSecret: need('SLACK_SIGNING_SECRET'),
  tokens: JSON.parse(readFileSync(need('SLACK_USER_TOKENS'), 'utf8')) as Record<string, string>,
});
const port = Number(process.env.PORT ?? 3100);
receiver.listen(port, '127.0.0.1', () => console.error(`slack-approvals receiver on http://127.0.0.1:${port}`));
