/**
 * Advancing a parked flow after a decision is recorded or its requester
 * withdraws: from the request's latest parked state, deliver the recorded
 * decisions it awaits (and an event, for a withdrawal), run it to its next
 * wait or its end, write it back (replayed from the newer state on a
 * conflict, a bounded number of times) and append the round to the audit
 * trail; then say in a sentence what became of the flow, for the decider's or
 * the requester's reply.
 */
import type { EventObject } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import type { AuditAnswer, AuditVia } from '../contract/audit.js';
import type { DecisionRecord, ParkedRequest } from '../contract/ledger.js';
import type { FlowResult, RoundOutcome } from '../contract/outcome.js';
import { readAnswers } from '../round/body.js';
import type { ReceivedEvent } from '../round/play.js';
import { RoundTrace, tracing } from '../telemetry/tracing.js';
import { openParked, type ParkedBlob, requesterBinding } from './parked.js';
import { currentBody, type ParkedPlay, playParked, recordedDecisions } from './playParked.js';
import type { DecisionsPort } from './port.js';

const MAX_ADVANCE_ATTEMPTS = 8;

function text(outcome: RoundOutcome): string {
  if (outcome.type === 'error') return outcome.message;
  return outcome.type === 'complete' ? resultText(outcome.result) : '';
}

/** The text blocks of a flow's result, joined by newlines ('' for none). */
export function resultText(result: FlowResult | undefined): string {
  if (!result) return '';
  return result.content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text)
    .join('\n');
}

/**
 * Advance a parked flow from its latest state: deliver the recorded decisions it awaits (and
 * `event`), run it to its next wait or end, write it back; replayed on a conflict. `undefined`
 * when the request is not waiting (or does not open). `proceed`, when given, is asked on every
 * read of the request, with its decisions, before anything runs: `false` stops there, nothing
 * written, with `{ type: 'conflict' }` (someone wrote what the caller does not go on from).
 * `reason`, an operator's, is the audit entry's `message` (before the flow's error, if any).
 * `sent`: an event another system sent, delivered where the instance awaits it (once); the events
 * the round delivered (its lookback rounds included) are appended to `sent.delivered`;
 * `sent.row`, the request as the router read it with its wait, is the first attempt's row (no
 * read of its own; a stale row is caught by the compare-and-set, and the next attempt reads).
 */
export async function advance(
  core: DecisionsPort,
  flow: Flow,
  id: string,
  caller: string,
  via: Exclude<AuditVia, 'call' | 'resume'>,
  event?: EventObject,
  proceed?: (decisions: readonly DecisionRecord[]) => boolean,
  reason?: string,
  sent?: { readonly event: ReceivedEvent; readonly delivered: string[]; readonly row?: ParkedRequest },
): Promise<ParkedPlay | undefined> {
  // With an OpenTelemetry SDK registered only: the round's span, in the instance's trace.
  const traced = tracing() ? new RoundTrace() : undefined;
  try {
    const result = await advanceRound(core, traced, flow, id, caller, via, event, proceed, reason, sent);
    traced?.end({ outcome: traceOutcome(result) });
    return result;
  } catch (error) {
    traced?.end(undefined, error);
    throw error;
  }
}

/** What a round's span says it came to. */
function traceOutcome(result: ParkedPlay | undefined): string {
  if (!result) return 'not_waiting';
  if (result.type === 'done') return result.end.outcome.type;
  if (result.type === 'ask') return 'input_required';
  return result.type;
}

/** {@link advance}, its span (when traced) begun once the instance's trace is known. */
async function advanceRound(
  core: DecisionsPort,
  traced: RoundTrace | undefined,
  flow: Flow,
  id: string,
  caller: string,
  via: Exclude<AuditVia, 'call' | 'resume'>,
  event?: EventObject,
  proceed?: (decisions: readonly DecisionRecord[]) => boolean,
  reason?: string,
  sent?: { readonly event: ReceivedEvent; readonly delivered: string[]; readonly row?: ParkedRequest },
): Promise<ParkedPlay | undefined> {
  const { codec, log } = core;
  const ledger = core.ledger!;
  for (let attempt = 0; attempt < MAX_ADVANCE_ATTEMPTS; attempt++) {
    const row = attempt === 0 && sent?.row?.id === id ? sent.row : await ledger.requests.getRequest(id);
    if (row?.status !== 'waiting') return undefined;
    const opened = openParked(codec, row);
    const body = opened && currentBody(flow, opened);
    if (!opened || !body) return undefined;
    const blob: ParkedBlob = { ...opened, s: body };
    const started = core.now();
    const received: AuditAnswer[] = [];
    const path: import('xstate').StateValue[] = [];
    const requester = requesterBinding(flow.name, blob);
    // A flow that declares no decision has no decision records: no read (an event's round trip less).
    const decisions = flow.decisions.length > 0 ? await ledger.decisions.listDecisions({ id }) : [];
    if (proceed && !proceed(decisions)) return { type: 'conflict' };
    const inject = {
      decisions: recordedDecisions(core, decisions, body),
      ...(event ? { event } : {}),
      ...(sent ? { received: sent.event } : {}),
    };
    const delivered: string[] = [];
    traced?.begin(
      { flow: flow.name, via, fid: id, round: blob.r + 1, principalHash: codec.digest(caller, 'audit-principal') },
      body.tc,
    );
    traced?.found(body.s[0]);
    const play = () =>
      playParked(core, {
        flow,
        parked: { row, blob },
        requester,
        binding: requester,
        fid: id,
        round: blob.r + 1,
        context: {},
        from: { body, pending: [] },
        answers: readAnswers(undefined),
        inject,
        receivedEvents: delivered,
        audit: { received, path },
      });
    const result = await (traced ? traced.run(play) : play());
    if (result.type === 'conflict') continue;
    sent?.delivered.push(...delivered);
    // An event this instance did not take (it no longer waits for it, or had it) and nothing else
    // moved it (no timer came due meanwhile): nothing was written, nothing to audit.
    if (sent && delivered.length === 0 && result.type === 'waiting' && result.row.version === row.version) {
      return result;
    }
    const outcome = result.type === 'done' ? result.end.outcome : undefined;
    await core.audit({
      flow,
      fid: id,
      round: blob.r + 1,
      started,
      principal: caller,
      via,
      before: body.s[0],
      path,
      asked: result.type === 'ask' ? result.end.asked : [],
      received,
      outcome: outcome ? outcome.type : 'input_required',
      ...(outcome?.type === 'error' || reason !== undefined
        ? { message: [reason, outcome?.type === 'error' ? outcome.message : undefined].filter(Boolean).join(': ') }
        : {}),
    });
    return result;
  }
  log({
    type: 'flow_error',
    flow: flow.name,
    fid: id,
    error: new Error('the request kept changing while advancing it'),
  });
  return undefined;
}

/** What an ended request's final outcome says ('' when it says nothing, or does not open). */
export function finalText(core: DecisionsPort, row: ParkedRequest): string {
  const final = openParked(core.codec, row)?.o;
  if (!final) return '';
  return final.type === 'complete' ? resultText(final.result) : final.message;
}

/** What became of the flow after a decision or a withdrawal, in a sentence. */
export function aftermath(id: string, result: ParkedPlay | undefined): string {
  if (!result) return `Request ${id} continues when its requester comes back.`;
  if (result.type === 'done') {
    const said = text(result.end.outcome);
    return result.end.terminal
      ? `The flow has ended${said ? `: ${said}` : '.'}`
      : `The flow could not continue yet: ${said}`;
  }
  if (result.type === 'waiting') {
    const keys = [
      ...result.end.decisions.map((d) => (d.role ? `${d.key} (role ${d.role})` : d.key)),
      ...result.end.events.map((e) => `the event "${e.name}" (${e.key})`),
    ];
    return `Request ${id} now waits for ${keys.join(' and ')}.`;
  }
  if (result.type === 'ask') return `Request ${id} now waits for its requester.`;
  if (result.type === 'working') return `Request ${id} is running ${result.end.steps.join(', ')}.`;
  return '';
}
