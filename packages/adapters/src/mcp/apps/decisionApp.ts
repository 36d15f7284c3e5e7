/**
 * The decision app's HTML document and its `ui://` resources. One static
 * document serves `ui://baton/inbox` (the approver's inbox),
 * `ui://baton/decide` (one decision and its form) and `ui://baton/run` (the
 * requester's run, which the tool of a flow that parks declares): the data comes with the
 * tool result the host hands the app, never in the document, so the document
 * is the same bytes for everyone and holds nothing of any request. An MCP App
 * is one HTML document shown in a sandboxed iframe with no origin of its own
 * to load a script from, so its code is inline (the spec's default host CSP
 * allows `'unsafe-inline'`): the document pins it with its own
 * Content-Security-Policy (a `<meta>`, which applies on top of the host's),
 * allowing exactly the script and the style sheet by their SHA-256 hashes,
 * no other script, no remote origin, no network connection, no form posts.
 * The resources declare no CSP domains (`_meta.ui.csp: {}`: the host's
 * strictest default) and are served as `text/html;profile=mcp-app`, through
 * ext-apps' `registerAppResource`.
 */
import { createHash } from 'node:crypto';
import { registerAppResource } from '@modelcontextprotocol/ext-apps/server';
import type { McpServer, RegisteredResource } from '@modelcontextprotocol/server';
import { APP_SCRIPT, APP_STYLE } from './decisionAppCode.js';
import { APP_MIME_TYPE } from './negotiation.js';

/** The approver's inbox app (`baton_inbox` declares it). */
export const INBOX_APP_URI = 'ui://baton/inbox';
/** The decision app (`baton_decide` declares it). */
export const DECIDE_APP_URI = 'ui://baton/decide';
/** The run-status app (the tools of flows that park, and `baton_run_status`, declare it). */
export const RUN_APP_URI = 'ui://baton/run';

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The document's own Content-Security-Policy: the inline script and style by hash, images only as
 * `data:`, nothing else (no remote origin, no `fetch`, no form posts, no `<base>`, no plugins).
 */
export const APP_CSP = [
  "default-src 'none'",
  `script-src ${sha256(APP_SCRIPT)}`,
  `style-src ${sha256(APP_STYLE)}`,
  'img-src data:',
  "connect-src 'none'",
  "form-action 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ');

/** The decision app's HTML5 document (the same for both URIs: the tool result says what to show). */
export const DECISION_APP_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${APP_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Baton</title>
<style>${APP_STYLE}</style>
</head>
<body>
<main id="app" aria-live="polite"></main>
<script>${APP_SCRIPT}</script>
</body>
</html>
`;

/** The document's size in bytes (UTF-8), as reported in `docs/mcp-apps.md`. */
export const DECISION_APP_BYTES = Buffer.byteLength(DECISION_APP_HTML, 'utf8');

/** The `_meta.ui` of the app resources: no CSP domains (the host's strictest default), a border. */
const UI_META = { ui: { csp: {}, prefersBorder: true } };

/** Register `ui://baton/inbox`, `ui://baton/decide` and `ui://baton/run` on `server` (for a client that declared MCP Apps). */
export function registerDecisionApps(server: McpServer): RegisteredResource[] {
  const apps = [
    { uri: INBOX_APP_URI, name: 'Baton inbox', description: 'The decisions waiting for you, to open and make.' },
    {
      uri: DECIDE_APP_URI,
      name: 'Baton decision',
      description: 'One decision: who asked, what, the deadline, approvals so far, and its form.',
    },
    {
      uri: RUN_APP_URI,
      name: 'Baton run',
      description: 'Your run: its state, who it waits for, deadlines, the steps that ran, and its outcome, live.',
    },
  ];
  return apps.map(({ uri, name, description }) =>
    registerAppResource(server, name, uri, { description, _meta: UI_META }, async () => ({
      contents: [{ uri, mimeType: APP_MIME_TYPE, text: DECISION_APP_HTML, _meta: UI_META }],
    })),
  );
}
