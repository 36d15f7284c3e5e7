/**
 * A Slack-style approvals receiver for Baton (an example, not a dependency).
 * It takes Baton's signed notifications (`baton serve --notify-webhook
 * http://this-host/baton --notify-secret whsec_…`), verifies them with the
 * `standardwebhooks` package, and for each `decision.requested` builds an
 * interactive message (Slack Block Kit) with Approve and Reject buttons and the
 * decision page's link (`--public-url`). When a button is clicked, Slack posts
 * the interaction to `/slack/actions`: the receiver checks Slack's request
 * signature, maps the Slack user to that person's Baton bearer token, and calls
 * `POST /api/decisions/<id>` with an `Idempotency-Key` derived from the click,
 * so Slack's retries record the decision once. Baton enforces who may decide
 * (four eyes, the role): the receiver holds no rule of its own.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

/** What the receiver needs. */
export interface ReceiverOptions {
  /** The `--notify-secret` of `baton serve` (`whsec_…`). */
  readonly batonSecret: string;
  /** Where `baton serve --http` answers, e.g. `https://baton.example.com` (its `/api/decisions`). */
  readonly batonUrl: string;
  /** Slack's signing secret of the app (checks `/slack/actions`). */
  readonly slackSigningSecret: string;
  /** The Baton bearer token of each Slack user who may click (their `--auth-tokens` entry). */
  readonly tokens: Readonly<Record<string, string>>;
  /** Post a message to the channel (e.g. Slack's `chat.postMessage`); this example's default prints it. */
  readonly post?: (message: SlackMessage) => Promise<void> | void;
}

/** A Slack message: fallback text and Block Kit blocks. */
export interface SlackMessage {
  readonly text: string;
  readonly blocks: readonly Record<string, unknown>[];
}

/** A `decision.requested` notification's `data` (see the adapters README, "Notifications"). */
export interface DecisionRequested {
  readonly requestId: string;
  readonly flow: string;
  readonly key: string;
  readonly role?: string;
  readonly deadline?: string;
  readonly message: string;
  readonly url?: string;
}

/** The Slack message for a decision: its question, Approve and Reject buttons, and the page's link. */
export function decisionMessage(data: DecisionRequested): SlackMessage {
  const value = JSON.stringify({ id: data.requestId, key: data.key });
  const context = [
    `${data.flow}${data.role ? `, for the role ${data.role}` : ''}`,
    ...(data.deadline ? [`decide by ${data.deadline}`] : []),
    ...(data.url ? [`<${data.url}|open the request>`] : []),
  ];
  return {
    text: data.message,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: data.message } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: context.join(' · ') }] },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            action_id: 'approve',
            style: 'primary',
            text: { type: 'plain_text', text: 'Approve' },
            value,
          },
          { type: 'button', action_id: 'reject', style: 'danger', text: { type: 'plain_text', text: 'Reject' }, value },
        ],
      },
    ],
  };
}

/** Slack's request signature (`v0=` HMAC-SHA256 of `v0:<timestamp>:<body>`), at most 5 minutes old. */
export function slackSignatureOk(secret: string, timestamp: string, body: string, signature: string): boolean {
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const expected = Buffer.from(`v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`);
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** What Baton answered, in one line for the Slack message that replaces the buttons. */
export interface DecisionOutcome {
  readonly ok: boolean;
  readonly text: string;
}

/**
 * Decide through Baton's HTTP API as `token`: approve or reject (the flows of `examples/approvals`
 * take `{ approve: boolean }`), under an idempotency key.
 */
export async function decide(
  batonUrl: string,
  token: string,
  target: { readonly id: string; readonly key: string },
  approve: boolean,
  idempotencyKey: string,
): Promise<DecisionOutcome> {
  const url = new URL(`/api/decisions/${encodeURIComponent(target.id)}`, batonUrl);
  url.searchParams.set('key', target.key);
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ action: 'accept', content: { approve } }),
  });
  const body = (await response.json()) as { message?: string; detail?: string };
  // 200: { status: 'recorded', message, … }; otherwise problem details: { reason, detail, decidedBy?, … }.
  return response.ok
    ? { ok: true, text: body.message ?? 'Recorded.' }
    : { ok: false, text: body.detail ?? `Baton answered ${response.status}.` };
}

function readBody(req: IncomingMessage, limit = 64 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > limit) reject(new Error('body too large'));
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

const header = (req: IncomingMessage, name: string) => String(req.headers[name] ?? '');

/** The receiver: `POST /baton` (Baton's notifications) and `POST /slack/actions` (button clicks). */
export function createReceiver(options: ReceiverOptions): Server {
  const webhook = new Webhook(options.batonSecret);
  const post = options.post ?? ((message: SlackMessage) => console.log(JSON.stringify(message)));
  return createServer(async (req, res) => {
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    try {
      const body = await readBody(req);
      if (req.method === 'POST' && req.url === '/baton') {
        let event: { type: string; data: DecisionRequested };
        try {
          event = webhook.verify(body, {
            'webhook-id': header(req, 'webhook-id'),
            'webhook-timestamp': header(req, 'webhook-timestamp'),
            'webhook-signature': header(req, 'webhook-signature'),
          }) as typeof event;
        } catch {
          return reply(401, { error: 'bad signature' });
        }
        if (event.type === 'decision.requested') await post(decisionMessage(event.data));
        return reply(204, null);
      }
      if (req.method === 'POST' && req.url === '/slack/actions') {
        const ok = slackSignatureOk(
          options.slackSigningSecret,
          header(req, 'x-slack-request-timestamp'),
          body,
          header(req, 'x-slack-signature'),
        );
        if (!ok) return reply(401, { error: 'bad signature' });
        const payload = JSON.parse(new URLSearchParams(body).get('payload') ?? '{}') as {
          user?: { id?: string };
          actions?: { action_id?: string; value?: string; action_ts?: string }[];
        };
        const action = payload.actions?.[0];
        const user = payload.user?.id ?? '';
        const token = options.tokens[user];
        if (!action?.value || !token) {
          return reply(200, { replace_original: false, text: 'You cannot decide from Slack: ask for access.' });
        }
        const target = JSON.parse(action.value) as { id: string; key: string };
        // One click, one key: Slack's retries of this interaction carry the same action_ts.
        const outcome = await decide(
          options.batonUrl,
          token,
          target,
          action.action_id === 'approve',
          `slack-${user}-${action.action_ts ?? ''}`,
        );
        return reply(
          200,
          outcome.ok ? { replace_original: true, text: outcome.text } : { replace_original: false, text: outcome.text },
        );
      }
      return reply(404, { error: 'not found' });
    } catch {
      return reply(400, { error: 'bad request' });
    }
  });
}
