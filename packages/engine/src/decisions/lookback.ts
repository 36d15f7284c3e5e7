/**
 * Received events in the ledger: how an event's data is sealed there (the
 * ledger never reads it: AES-256-GCM under the `event` purpose, bound to the
 * event's name and id), and the lookback, which closes the race of an event
 * that arrives just before its instance waits. An instance that has just been
 * parked waiting for events asks the ledger for the events of the same name
 * and correlation key whose lookback window is still open, and the earliest
 * it has not received yet is delivered at once (`playParked.ts`). With the
 * router's order (record the event, then read the waiters) no event is lost
 * to that race, and the instance's record of events received (`RoundBody.e`,
 * written with the compare-and-set) keeps it from being delivered twice.
 */
import { canonicalJson } from '../codec/canonicalJson.js';
import type { RequestStateCodec } from '../codec/types.js';
import type { FullLedger } from '../contract/ledger.js';
import type { RoundBody } from '../round/body.js';
import { type AwaitedEvent, type ReceivedEvent, receivedId } from '../round/play.js';
import type { DecisionsPort } from './port.js';

const PURPOSE = 'event';

function eventBinding(name: string, id: string): string {
  return canonicalJson(['event', name, id]);
}

/** Seal an event's parsed data for the ledger. */
export function sealEventData(codec: RequestStateCodec, name: string, id: string, data: unknown): string {
  return codec.sealBlob(JSON.stringify(data ?? null), PURPOSE, eventBinding(name, id));
}

/** Open an event's sealed data; `undefined` when it does not open (altered, or its key left the ring). */
export function openEventData(
  codec: RequestStateCodec,
  name: string,
  id: string,
  sealed: string,
): { readonly data: unknown } | undefined {
  try {
    return { data: JSON.parse(codec.openBlob(sealed, PURPOSE, eventBinding(name, id))) as unknown };
  } catch {
    return undefined;
  }
}

/** At most this many events are read per awaited event and correlation key. */
const LOOKBACK_LIMIT = 50;

/**
 * The earliest event in an open lookback window that `body`'s instance awaits (`events`) and has
 * not received; `undefined` when none (or the ledger keeps no events).
 */
export async function lookbackEvent(
  core: DecisionsPort,
  body: RoundBody,
  events: readonly AwaitedEvent[],
): Promise<ReceivedEvent | undefined> {
  const ledger = core.ledger;
  if (ledger === undefined || events.length === 0) return undefined;
  const now = core.now();
  const seen = new Set(body.e ?? []);
  const asked = new Set<string>();
  let earliest: { event: ReceivedEvent; at: number } | undefined;
  for (const awaited of events) {
    if (awaited.lookbackMs <= 0) continue;
    const pair = canonicalJson([awaited.name, awaited.match]);
    if (asked.has(pair)) continue;
    asked.add(pair);
    const recent = await ledger.events.recentEvents({
      event: awaited.name,
      match: awaited.match,
      now,
      limit: LOOKBACK_LIMIT,
    });
    for (const record of recent) {
      if (seen.has(receivedId(record.event, record.id))) continue;
      if (earliest && earliest.at <= record.receivedAt) break;
      const opened = openEventData(core.codec, record.event, record.id, record.data);
      if (!opened) {
        core.log({
          type: 'flow_error',
          flow: '',
          fid: '',
          error: new Error(
            `the received event "${record.event}" does not open: the ledger was altered, or its key left the ring`,
          ),
        });
        continue;
      }
      earliest = {
        event: { name: record.event, id: record.id, match: record.match, data: opened.data },
        at: record.receivedAt,
      };
      break;
    }
  }
  return earliest?.event;
}
