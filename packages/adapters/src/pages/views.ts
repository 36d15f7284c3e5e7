/**
 * The decision pages' bodies: the decide page (what is asked, by whom, on
 * which flow, with which arguments, until when, what was decided already,
 * and the form with Approve-style "Submit" and "Decline", and a small "hand
 * to…" form), its outcome
 * pages, and the inbox list. Pure functions from data to escaped HTML
 * (`html.ts`); no state, no I/O.
 */
import type { InboxItem } from '@baton/engine';
import { type DecisionMade, type DecisionView, type PageQuorum, pageQuorum } from './decisionPort.js';
import { type FieldIssue, renderFields, type SubmittedFields } from './form.js';
import { html, type SafeHtml } from './html.js';

/** A time as people read it, in UTC, inside `<time>`. */
export function when(ms: number): SafeHtml {
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** An argument's value as text. */
function valueText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The link to one decision's page. */
export function decideHref(id: string, key?: string): string {
  return `/decide/${encodeURIComponent(id)}${key ? `?key=${encodeURIComponent(key)}` : ''}`;
}

function madeList(decisions: readonly DecisionMade[]): SafeHtml {
  if (decisions.length === 0) return html``;
  return html`<section class="made"><h2>Decided already</h2><ul>${decisions.map(
    (d) =>
      html`<li><strong>${d.key}</strong> by ${d.by}${d.for !== undefined ? html` for ${d.for}` : ''}${d.at !== undefined ? html`, ${when(d.at)}` : ''}</li>`,
  )}</ul></section>`;
}

/** "1 of 2 approvals (bob) · 1 more needed", for a quorum decision ('' otherwise). */
function quorumLine(quorum: PageQuorum | undefined): SafeHtml | string {
  if (!quorum) return '';
  const who = quorum.approvedBy.length > 0 ? ` (${quorum.approvedBy.join(', ')})` : '';
  return html`<span class="quorum" data-needed="${quorum.needed}">${quorum.approvals} of ${quorum.required} approvals${who} · ${quorum.needed} more needed</span>`;
}

/** The decide page's body: the request and its form. */
export function decideBody(
  view: DecisionView,
  csrf: string,
  submitted?: {
    readonly fields: SubmittedFields;
    readonly problem: string;
    readonly issues?: readonly FieldIssue[];
  },
  canDelegate = false,
): SafeHtml {
  const args = view.args ? Object.entries(view.args) : [];
  return html`<article class="card decision" data-request="${view.id}" data-key="${view.key}">
<p class="flow">${view.flowTitle ?? view.flow}${view.flowTitle && view.flow ? html` <code>${view.flow}</code>` : ''}</p>
<h1 class="message">${view.message}</h1>
<dl class="facts">
${view.requester ? html`<div><dt>Requested by</dt><dd class="requester">${view.requester}</dd></div>` : ''}
${view.requestedAt !== undefined ? html`<div><dt>Requested</dt><dd>${when(view.requestedAt)}</dd></div>` : ''}
<div><dt>Decide by</dt><dd class="deadline">${view.deadline !== undefined ? when(view.deadline) : 'no deadline'}</dd></div>
<div><dt>Request</dt><dd><code>${view.id}</code> · ${view.key}</dd></div>
${view.quorum ? html`<div><dt>Approvals</dt><dd>${quorumLine(view.quorum)}</dd></div>` : ''}
${view.delegated ? html`<div><dt>You decide</dt><dd class="delegated">${view.delegated}</dd></div>` : ''}
${view.handedOver ? html`<div><dt>Handed over</dt><dd class="handed">${view.handedOver}</dd></div>` : ''}
</dl>
${
  args.length > 0
    ? html`<section class="args"><h2>Details</h2><dl>${args.map(
        ([name, value]) => html`<div><dt>${name}</dt><dd>${valueText(value)}</dd></div>`,
      )}</dl></section>`
    : ''
}
${madeList(view.decisions)}
<form class="answer" method="post" action="${decideHref(view.id, view.key)}">
<input type="hidden" name="_csrf" value="${csrf}">
${submitted ? html`<p class="problem" role="alert" id="problem">Your answer was not accepted: ${submitted.problem}</p>` : ''}
${renderFields(view.requestedSchema, submitted?.fields, submitted?.issues)}
<div class="actions">
<button type="submit" name="_action" value="accept" class="primary">Submit decision</button>
<button type="submit" name="_action" value="decline" formnovalidate class="secondary">Decline to decide</button>
</div>
<p class="hint">Submitting records your answer once, under your name. Declining leaves the decision to someone else.</p>
</form>
${canDelegate ? handForm(view, csrf) : ''}
</article>`;
}

/** The small "hand to…" form: the decision goes to another person, who may make it for you. */
function handForm(view: DecisionView, csrf: string): SafeHtml {
  return html`<form class="hand" method="post" action="${decideHref(view.id, view.key)}">
<input type="hidden" name="_csrf" value="${csrf}">
<details><summary>Hand to someone else…</summary>
<label>To <input name="to" required maxlength="256" autocomplete="off"></label>
<label>Why <input name="reason" maxlength="500" autocomplete="off"></label>
<button type="submit" name="_action" value="delegate" formnovalidate class="secondary">Hand over</button>
<p class="hint">They may then make it for you; you no longer may while it is with them.</p>
</details>
</form>`;
}

/** The page after an answer: what happened, in the engine's words. */
export function outcomeBody(title: string, sentence: string, kind: 'recorded' | 'declined'): SafeHtml {
  return html`<section class="card notice ${kind}" data-outcome="${kind}">
<h1>${title}</h1>
<p class="sentence">${sentence}</p>
<p><a href="/inbox">Back to your inbox</a></p>
</section>`;
}

/** An inbox item's mark when it came through a delegation. */
function delegatedMark(item: InboxItem): SafeHtml | string {
  const d = item.delegated;
  if (!d) return '';
  const text =
    d.kind === 'handover'
      ? `handed to you by ${d.by ?? d.onBehalfOf}, for ${d.onBehalfOf}`
      : `for ${d.onBehalfOf}, who is away`;
  return html` · <span class="delegated" data-kind="${d.kind}">${text}</span>`;
}

/** The inbox list (also served alone, for the live refresh). */
export function inboxList(items: readonly InboxItem[]): SafeHtml {
  const readable = items.filter((item) => item.unreadable === undefined);
  if (readable.length === 0) {
    return html`<div id="inbox-list" data-count="0"><p class="empty">Nothing waits for your decision.</p></div>`;
  }
  return html`<div id="inbox-list" data-count="${readable.length}"><ul class="inbox">${readable.map(
    (item) => html`<li class="card item" data-request="${item.id}">
<a class="open" href="${decideHref(item.id, item.key)}"><span class="message">${item.message}</span></a>
<p class="meta"><span>${item.flow}</span> · <span>requested ${when(item.requestedAt)}</span>${
      item.deadline !== undefined ? html` · <span class="deadline">decide by ${when(item.deadline)}</span>` : ''
    }${item.quorum ? html` · ${quorumLine(pageQuorum(item.quorum))}` : ''}${delegatedMark(item)}</p>
</li>`,
  )}</ul></div>`;
}

/** The inbox page's body. */
export function inboxBody(items: readonly InboxItem[], pollMs: number): SafeHtml {
  return html`<section class="inbox-page">
<h1>Waiting for your decision</h1>
<p class="hint live" id="live" data-poll-ms="${pollMs}">This list refreshes by itself.</p>
${inboxList(items)}
</section>`;
}
