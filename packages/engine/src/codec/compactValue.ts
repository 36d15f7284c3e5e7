/**
 * The binary encoding of a requestState body (format version 3): the JSON
 * data model in a small tagged format, so a state carries no quotes, colons,
 * or decimal digits. One tag byte per value; small integers, short strings,
 * short arrays and small objects keep their length in the tag. Two
 * back-references cost a byte or two where JSON repeats text the receiver
 * already holds: a string equal to one of the caller's argument keys or
 * string values (or the flow name, or a word of MCP answers such as
 * `action` and `accept`) is its index in a dictionary built from the
 * state's binding, which is authenticated beside the state, never stored (a
 * string the same value already holds is an index too, past the dictionary's); and
 * an XState `after` timer id, `xstate.after.<delay>.<flow>.<path>`, is stored
 * as `<delay>` and `<path>`. The semantics are JSON's: `toJSON` is honoured,
 * `undefined` members are dropped (and array items become `null`), -0 comes
 * back as 0, non-finite numbers and bigints are refused. Decoding builds plain
 * objects with own data properties only (a `"__proto__"` key is an own
 * property, as with `JSON.parse`), bounds nesting, and checks every length
 * against the bytes left before allocating, so no input can exhaust memory or
 * the stack; any flaw throws InvalidRequestStateError('malformed').
 *
 * Tags: 0x00 null, 0x01 false, 0x02 true, 0x03 float64, 0x04 uint (varint),
 * 0x05 negative int (varint of -n-1), 0x06 UTF-8 string (varint length),
 * 0x07 array (varint count), 0x08 object (varint count, then key/value pairs,
 * keys being string values), 0x09 dictionary reference (varint index), 0x0a
 * UTF-16 string (varint code units; for strings with lone surrogates, which
 * UTF-8 cannot carry), 0x0b `after` timer id (delay string, path string);
 * 0x20-0x3f reference 0-31, 0x40-0x7f uint 0-63, 0x80-0xbf UTF-8 string of
 * 0-63 bytes, 0xc0-0xdf array of 0-31 items, 0xe0-0xff object of 0-31 members.
 */
import { fail } from './envelope.js';

/** How deeply arrays and objects may nest, encoding and decoding. */
export const MAX_VALUE_DEPTH = 512;
/** How many strings of a binding a dictionary holds at most (the first ones found). */
const MAX_DICTIONARY = 256;
/** How many strings written in full one value may refer back to. */
const MAX_SEEN = 4096;
/** Shortest string worth a dictionary entry (a reference costs 1 byte, 2 past 32 entries). */
const MIN_DICTIONARY_LENGTH = 3;
const AFTER_PREFIX = 'xstate.after.';

const NULL = 0x00;
const FALSE = 0x01;
const TRUE = 0x02;
const FLOAT64 = 0x03;
const UINT = 0x04;
const NEGINT = 0x05;
const STR = 0x06;
const ARR = 0x07;
const OBJ = 0x08;
const REF = 0x09;
const STR16 = 0x0a;
const AFTER = 0x0b;
const REF_INLINE = 0x20;
const UINT_INLINE = 0x40;
const STR_INLINE = 0x80;
const ARR_INLINE = 0xc0;
const OBJ_INLINE = 0xe0;

/**
 * Strings every version-3 dictionary starts with: the words of the answers a state holds
 * between rounds (MCP elicitation, sampling and roots results, as Baton delivers them) and of
 * decisions. Part of format version 3 (indexes are stored, and the binding's strings come after
 * these): changing the list in any way takes a new format version.
 */
const STATIC_STRINGS: readonly string[] = [
  'action',
  'accept',
  'decline',
  'cancel',
  'content',
  'unsupported',
  'result',
  'roots',
  'uri',
  'name',
  'role',
  'assistant',
  'text',
  'type',
  'model',
  'stopReason',
  'endTurn',
  'decider',
  'approve',
  'comment',
];

/**
 * Strings the encoder may replace by a reference: {@link STATIC_STRINGS}, the flow name, then
 * the keys and string values of the arguments in canonical (sorted-key) order. Built the same
 * way on both sides from the binding, so the index of a string is the same when minting and
 * opening.
 */
export interface Dictionary {
  readonly flow: string;
  /** The binding's strings, at indexes from `STATIC_STRINGS.length` on. */
  readonly strings: readonly string[];
  /** Their indexes (the static strings are in `STATIC_INDEX`). */
  readonly index: ReadonlyMap<string, number>;
  /** The length of the longest of `strings` (0 when there are none). */
  readonly maxLength: number;
}

const STATIC_INDEX: ReadonlyMap<string, number> = new Map(STATIC_STRINGS.map((s, i) => [s, i]));
const STATIC_MAX_LENGTH = Math.max(...STATIC_STRINGS.map((s) => s.length));

/** The dictionary of a binding's flow name and arguments (at most 256 strings of 3+ characters). */
export function dictionaryOf(flow: string, args: unknown): Dictionary {
  // Only the strings of this binding: the static ones are shared (indexes 0 to 19). Module-level
  // helpers rather than closures: this runs every round.
  const found: DictionaryStrings = { strings: [], index: new Map<string, number>() };
  addDictionaryString(found, flow);
  walkDictionaryStrings(found, args, 0);
  let maxLength = 0;
  for (const s of found.strings) if (s.length > maxLength) maxLength = s.length;
  return { flow, strings: found.strings, index: found.index, maxLength };
}

/** The strings a dictionary is being built from. */
interface DictionaryStrings {
  readonly strings: string[];
  readonly index: Map<string, number>;
}

function addDictionaryString(found: DictionaryStrings, value: string): void {
  const { strings, index } = found;
  if (
    value.length >= MIN_DICTIONARY_LENGTH &&
    strings.length < MAX_DICTIONARY &&
    !index.has(value) &&
    !STATIC_INDEX.has(value)
  ) {
    index.set(value, STATIC_STRINGS.length + strings.length);
    strings.push(value);
  }
}

/**
 * Arguments nest only as deep as the runner's input checks allow; stop early all the same. It
 * visits what canonical JSON of the arguments holds (the binding authenticates exactly that):
 * `toJSON` results, and no member whose value JSON drops.
 */
function walkDictionaryStrings(found: DictionaryStrings, input: unknown, depth: number): void {
  if (found.strings.length >= MAX_DICTIONARY || depth > 32) return;
  const value = resolveJson(input);
  if (typeof value === 'string') addDictionaryString(found, value);
  else if (Array.isArray(value)) for (const item of value) walkDictionaryStrings(found, item, depth + 1);
  else if (typeof value === 'object' && value !== null) {
    for (const key of Object.keys(value).sort()) {
      const member = resolveJson((value as Record<string, unknown>)[key]);
      if (!isCarried(member)) continue;
      addDictionaryString(found, key);
      walkDictionaryStrings(found, member, depth + 1);
    }
  }
}

/** A growable output buffer. */
class Writer {
  buffer = Buffer.allocUnsafe(256);
  length = 0;

  reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(next, 0, 0, this.length);
    this.buffer = next;
  }

  byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  /** Unsigned LEB128 of a safe integer (at most 8 bytes). */
  varint(value: number): void {
    this.reserve(8);
    while (value >= 0x80) {
      this.buffer[this.length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buffer[this.length++] = value;
  }

  /** A tag with an inline count below `limit`, or the long tag and a varint. */
  counted(inlineTag: number, limit: number, longTag: number, count: number): void {
    if (count < limit) this.byte(inlineTag + count);
    else {
      this.byte(longTag);
      this.varint(count);
    }
  }

  bytes(value: Uint8Array): void {
    this.reserve(value.length);
    this.buffer.set(value, this.length);
    this.length += value.length;
  }

  /** A short ASCII string with its inline tag, or `false` (nothing written) when it is not one. */
  shortAscii(value: string): boolean {
    const length = value.length;
    if (length >= 64) return false;
    this.reserve(length + 1);
    const buffer = this.buffer;
    let at = this.length + 1;
    for (let i = 0; i < length; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x80) return false;
      buffer[at++] = code;
    }
    buffer[this.length] = STR_INLINE + length;
    this.length = at;
    return true;
  }

  utf8(value: string, bytes: number): void {
    this.reserve(bytes);
    this.length += this.buffer.write(value, this.length, 'utf8');
  }

  done(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Encode a JSON value (see the module comment for the format), after `prefix` when given.
 * @throws TypeError for a value JSON cannot carry (a function, a symbol, a non-finite number, a
 *   bigint, a cycle) or nesting past {@link MAX_VALUE_DEPTH}.
 */
export function encodeValue(value: unknown, dictionary: Dictionary, prefix?: Uint8Array): Buffer {
  if (!isCarried(resolveJson(value))) throw new TypeError('requestState: the body is not a JSON value');
  const encoder = new Encoder(dictionary);
  if (prefix) encoder.out.bytes(prefix);
  encoder.value(value, 0);
  return encoder.out.done();
}

/** One encoding pass (a class, not closures: nothing is allocated per call but the output). */
class Encoder {
  readonly out = new Writer();
  readonly #dictionary: Dictionary;
  readonly #afterInfix: string | undefined;
  readonly #ancestors: object[] = [];
  /** Strings already written in full by this pass, by the index a repeat refers to. */
  readonly #seen = new Map<string, number>();
  readonly #firstSeenIndex: number;

  constructor(dictionary: Dictionary) {
    this.#dictionary = dictionary;
    this.#afterInfix = dictionary.flow === '' ? undefined : `.${dictionary.flow}.`;
    this.#firstSeenIndex = STATIC_STRINGS.length + dictionary.strings.length;
  }

  string(s: string): void {
    const out = this.out;
    const long = s.length >= MIN_DICTIONARY_LENGTH;
    // Maps are only asked when a string could be in them (hashing a fresh string is not free).
    const length = s.length;
    const ref = !long
      ? undefined
      : ((length <= STATIC_MAX_LENGTH ? STATIC_INDEX.get(s) : undefined) ??
        (length <= this.#dictionary.maxLength ? this.#dictionary.index.get(s) : undefined) ??
        (this.#seen.size > 0 ? this.#seen.get(s) : undefined));
    if (ref !== undefined) {
      out.counted(REF_INLINE, 32, REF, ref);
      return;
    }
    const infix = this.#afterInfix;
    if (infix !== undefined && s.startsWith(AFTER_PREFIX)) {
      const at = s.indexOf(infix, AFTER_PREFIX.length);
      if (at >= 0) {
        out.byte(AFTER);
        this.string(s.slice(AFTER_PREFIX.length, at));
        this.string(s.slice(at + infix.length));
        return;
      }
    }
    // Written in full from here on: a repeat refers to it (the decoder records it the same way).
    if (long && this.#seen.size < MAX_SEEN) this.#seen.set(s, this.#firstSeenIndex + this.#seen.size);
    if (out.shortAscii(s)) return;
    if (!isWellFormed(s)) {
      out.byte(STR16);
      out.varint(s.length);
      out.reserve(s.length * 2);
      for (let i = 0; i < s.length; i++) {
        out.buffer.writeUInt16LE(s.charCodeAt(i), out.length);
        out.length += 2;
      }
      return;
    }
    const bytes = Buffer.byteLength(s, 'utf8');
    out.counted(STR_INLINE, 64, STR, bytes);
    out.utf8(s, bytes);
  }

  value(input: unknown, depth: number): void {
    const out = this.out;
    const v = resolveJson(input);
    switch (typeof v) {
      case 'string':
        this.string(v);
        return;
      case 'boolean':
        out.byte(v ? TRUE : FALSE);
        return;
      case 'number':
        if (!Number.isFinite(v)) throw new TypeError('requestState: the body holds a non-finite number');
        if (Number.isSafeInteger(v)) {
          if (v >= 0) {
            out.counted(UINT_INLINE, 64, UINT, v);
            return;
          }
          out.byte(NEGINT);
          out.varint(-v - 1);
          return;
        }
        out.byte(FLOAT64);
        out.reserve(8);
        out.buffer.writeDoubleBE(v, out.length);
        out.length += 8;
        return;
      case 'bigint':
        throw new TypeError('requestState: the body holds a bigint, which JSON cannot carry');
      case 'object':
        break;
      default:
        // undefined, functions and symbols: `null` here; object members holding them are dropped.
        out.byte(NULL);
        return;
    }
    if (v === null) {
      out.byte(NULL);
      return;
    }
    if (depth >= MAX_VALUE_DEPTH) throw new TypeError(`requestState: the body nests past ${MAX_VALUE_DEPTH} levels`);
    const ancestors = this.#ancestors;
    if (ancestors.includes(v)) throw new TypeError('requestState: the body is cyclic');
    ancestors.push(v);
    if (Array.isArray(v)) {
      out.counted(ARR_INLINE, 32, ARR, v.length);
      for (const item of v) this.value(item, depth + 1);
    } else {
      const record = v as Record<string, unknown>;
      const keys = Object.keys(record);
      let carried = 0;
      for (const key of keys) if (isCarried(resolveJson(record[key]))) carried++;
      out.counted(OBJ_INLINE, 32, OBJ, carried);
      for (const key of keys) {
        const member = record[key];
        if (!isCarried(resolveJson(member))) continue;
        this.string(key);
        this.value(member, depth + 1);
      }
    }
    ancestors.pop();
  }
}

/** `String.prototype.isWellFormed` (Node 20 has it; the TypeScript lib of this target does not). */
function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** What JSON encodes for `value`: the result of its `toJSON` when it has one. */
function resolveJson(value: unknown): unknown {
  return typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function'
    ? (value as { toJSON: () => unknown }).toJSON()
    : value;
}

/** Whether JSON would keep an object member holding `value`. */
function isCarried(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Decode a value written by {@link encodeValue} with the same dictionary; the whole of `bytes`
 * must be one value.
 * @throws InvalidRequestStateError('malformed') for anything else, never another error.
 */
export function decodeValue(bytes: Uint8Array, dictionary: Dictionary): unknown {
  const decoder = new Decoder(bytes, dictionary);
  const value = decoder.value(0);
  if (decoder.at !== bytes.length) fail('malformed');
  return value;
}

/** One decoding pass over bytes (a class, not closures: nothing is allocated per call but the values). */
class Decoder {
  at = 0;
  readonly #view: Buffer;
  readonly #end: number;
  readonly #dictionary: Dictionary;
  /** Strings decoded in full so far, in order: what a later reference may name. */
  readonly #seen: string[] = [];

  constructor(bytes: Uint8Array, dictionary: Dictionary) {
    this.#view = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#end = bytes.length;
    this.#dictionary = dictionary;
  }

  byte(): number {
    if (this.at >= this.#end) fail('malformed');
    return this.#view[this.at++]!;
  }

  /** Unsigned LEB128 (at most 8 bytes, canonical, a safe integer). */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.byte();
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if ((b === 0 && i > 0) || value > Number.MAX_SAFE_INTEGER) fail('malformed');
        return value;
      }
      scale *= 0x80;
    }
    return fail('malformed');
  }

  /** A count of items each taking at least `minBytes`, checked against the bytes left. */
  count(n: number, minBytes: number): number {
    if (n * minBytes > this.#end - this.at) fail('malformed');
    return n;
  }

  text(length: number): string {
    if (length > this.#end - this.at) fail('malformed');
    const view = this.#view;
    const start = this.at;
    const end = start + length;
    this.at = end;
    // ASCII (the common case) decodes as latin1, without a validating decoder's call overhead.
    let ascii = true;
    for (let i = start; i < end && ascii; i++) ascii = view[i]! < 0x80;
    let s: string;
    if (ascii) s = view.toString('latin1', start, end);
    else {
      try {
        s = utf8.decode(view.subarray(start, end));
      } catch {
        return fail('malformed');
      }
    }
    return this.record(s);
  }

  /** Note a string decoded in full, as the encoder did, and return it. */
  record(s: string): string {
    if (s.length >= MIN_DICTIONARY_LENGTH && this.#seen.length < MAX_SEEN) this.#seen.push(s);
    return s;
  }

  reference(index: number): string {
    const strings = this.#dictionary.strings;
    const s =
      index < STATIC_STRINGS.length
        ? STATIC_STRINGS[index]
        : index < STATIC_STRINGS.length + strings.length
          ? strings[index - STATIC_STRINGS.length]
          : this.#seen[index - STATIC_STRINGS.length - strings.length];
    if (s === undefined) fail('malformed');
    return s;
  }

  string(depth: number): string {
    const value = this.value(depth);
    if (typeof value !== 'string') fail('malformed');
    return value;
  }

  array(n: number, depth: number): unknown[] {
    const items = new Array<unknown>(this.count(n, 1));
    for (let i = 0; i < n; i++) items[i] = this.value(depth + 1);
    return items;
  }

  object(n: number, depth: number): Record<string, unknown> {
    this.count(n, 2);
    const record: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = this.string(depth + 1);
      const value = this.value(depth + 1);
      // An own data property whatever the key (`__proto__` included), as JSON.parse makes it.
      if (key === '__proto__') {
        Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
      } else record[key] = value;
    }
    return record;
  }

  value(depth: number): unknown {
    if (depth > MAX_VALUE_DEPTH) fail('malformed');
    const tag = this.byte();
    if (tag >= OBJ_INLINE) return this.object(tag - OBJ_INLINE, depth);
    if (tag >= ARR_INLINE) return this.array(tag - ARR_INLINE, depth);
    if (tag >= STR_INLINE) return this.text(tag - STR_INLINE);
    if (tag >= UINT_INLINE) return tag - UINT_INLINE;
    if (tag >= REF_INLINE) return this.reference(tag - REF_INLINE);
    switch (tag) {
      case NULL:
        return null;
      case FALSE:
        return false;
      case TRUE:
        return true;
      case FLOAT64: {
        if (this.#end - this.at < 8) fail('malformed');
        const value = this.#view.readDoubleBE(this.at);
        this.at += 8;
        if (!Number.isFinite(value)) fail('malformed');
        return value;
      }
      case UINT:
        return this.varint();
      case NEGINT:
        return -this.varint() - 1;
      case STR:
        return this.text(this.varint());
      case ARR:
        return this.array(this.varint(), depth);
      case OBJ:
        return this.object(this.varint(), depth);
      case REF:
        return this.reference(this.varint());
      case STR16: {
        const units = this.count(this.varint(), 2);
        let s = '';
        for (let i = 0; i < units; i++, this.at += 2) s += String.fromCharCode(this.#view.readUInt16LE(this.at));
        return this.record(s);
      }
      case AFTER: {
        const flow = this.#dictionary.flow;
        if (flow === '') fail('malformed');
        const delay = this.string(depth + 1);
        return `${AFTER_PREFIX}${delay}.${flow}.${this.string(depth + 1)}`;
      }
      default:
        return fail('malformed');
    }
  }
}
