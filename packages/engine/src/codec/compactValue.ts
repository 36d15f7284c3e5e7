/**
 * The binary encoding of a requestState body (format version 3): the JSON
 * data model in a small tagged format, so a state carries no quotes, colons,
 * or decimal digits. One tag byte per value; small integers, short strings,
 * short arrays and small objects keep their length in the tag. Two
 * back-references cost a byte or two where JSON repeats text the receiver
 * already holds: a string equal to one of the caller's argument keys or
 * string values (or the flow name) is its index in a dictionary built from the
 * state's binding, which is authenticated beside the state, never stored; and
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
/** How many strings a dictionary holds at most (the first ones found). */
const MAX_DICTIONARY = 256;
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
 * Strings the encoder may replace by a reference: the flow name, then the keys and string
 * values of the arguments in canonical (sorted-key) order. Built the same way on both sides
 * from the binding, so the index of a string is the same when minting and opening.
 */
export interface Dictionary {
  readonly flow: string;
  readonly strings: readonly string[];
  readonly index: ReadonlyMap<string, number>;
}

/** The dictionary of a binding's flow name and arguments (at most 256 strings of 3+ characters). */
export function dictionaryOf(flow: string, args: unknown): Dictionary {
  const strings: string[] = [];
  const index = new Map<string, number>();
  const add = (value: string) => {
    if (value.length >= MIN_DICTIONARY_LENGTH && strings.length < MAX_DICTIONARY && !index.has(value)) {
      index.set(value, strings.length);
      strings.push(value);
    }
  };
  add(flow);
  // Arguments nest only as deep as the runner's input checks allow; stop early all the same.
  // It visits what canonical JSON of the arguments holds (the binding authenticates exactly that):
  // `toJSON` results, and no member whose value JSON drops.
  const walk = (input: unknown, depth: number) => {
    if (strings.length >= MAX_DICTIONARY || depth > 32) return;
    const value = resolveJson(input);
    if (typeof value === 'string') add(value);
    else if (Array.isArray(value)) for (const item of value) walk(item, depth + 1);
    else if (typeof value === 'object' && value !== null) {
      for (const key of Object.keys(value).sort()) {
        const member = resolveJson((value as Record<string, unknown>)[key]);
        if (!isCarried(member)) continue;
        add(key);
        walk(member, depth + 1);
      }
    }
  };
  walk(args, 0);
  return { flow, strings, index };
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

  utf8(value: string, bytes: number): void {
    this.reserve(bytes);
    this.length += this.buffer.write(value, this.length, 'utf8');
  }

  done(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Encode a JSON value (see the module comment for the format).
 * @throws TypeError for a value JSON cannot carry (a function, a symbol, a non-finite number, a
 *   bigint, a cycle) or nesting past {@link MAX_VALUE_DEPTH}.
 */
export function encodeValue(value: unknown, dictionary: Dictionary): Buffer {
  const out = new Writer();
  const afterInfix = dictionary.flow === '' ? undefined : `.${dictionary.flow}.`;

  const string = (s: string): void => {
    const ref = s.length >= MIN_DICTIONARY_LENGTH ? dictionary.index.get(s) : undefined;
    if (ref !== undefined) return out.counted(REF_INLINE, 32, REF, ref);
    if (afterInfix !== undefined && s.startsWith(AFTER_PREFIX)) {
      const at = s.indexOf(afterInfix, AFTER_PREFIX.length);
      if (at >= 0) {
        out.byte(AFTER);
        string(s.slice(AFTER_PREFIX.length, at));
        string(s.slice(at + afterInfix.length));
        return;
      }
    }
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
  };

  const write = (input: unknown, depth: number, ancestors: object[]): void => {
    const v = resolveJson(input);
    switch (typeof v) {
      case 'string':
        return string(v);
      case 'boolean':
        return out.byte(v ? TRUE : FALSE);
      case 'number':
        if (!Number.isFinite(v)) throw new TypeError('requestState: the body holds a non-finite number');
        if (Number.isSafeInteger(v)) {
          if (v >= 0) return out.counted(UINT_INLINE, 64, UINT, v);
          out.byte(NEGINT);
          return out.varint(-v - 1);
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
        return out.byte(NULL);
    }
    if (v === null) return out.byte(NULL);
    if (depth >= MAX_VALUE_DEPTH) throw new TypeError(`requestState: the body nests past ${MAX_VALUE_DEPTH} levels`);
    if (ancestors.includes(v)) throw new TypeError('requestState: the body is cyclic');
    ancestors.push(v);
    if (Array.isArray(v)) {
      out.counted(ARR_INLINE, 32, ARR, v.length);
      for (const item of v) write(item, depth + 1, ancestors);
    } else {
      const record = v as Record<string, unknown>;
      const members: [string, unknown][] = [];
      for (const key of Object.keys(record)) {
        const member = resolveJson(record[key]);
        if (isCarried(member)) members.push([key, member]);
      }
      out.counted(OBJ_INLINE, 32, OBJ, members.length);
      for (const [key, member] of members) {
        string(key);
        write(member, depth + 1, ancestors);
      }
    }
    ancestors.pop();
  };

  if (!isCarried(resolveJson(value))) throw new TypeError('requestState: the body is not a JSON value');
  write(value, 0, []);
  return out.done();
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
  let at = 0;
  const end = bytes.length;
  const byte = (): number => {
    if (at >= end) fail('malformed');
    return bytes[at++]!;
  };
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = byte();
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        // Canonical: no trailing zero group, and within the safe integers.
        if ((b === 0 && i > 0) || value > Number.MAX_SAFE_INTEGER) fail('malformed');
        return value;
      }
      scale *= 0x80;
    }
    return fail('malformed');
  };
  /** A count of items each taking at least `minBytes`, checked against what is left. */
  const count = (n: number, minBytes: number): number => {
    if (n * minBytes > end - at) fail('malformed');
    return n;
  };
  const text = (length: number): string => {
    if (length > end - at) fail('malformed');
    const start = at;
    at += length;
    try {
      return utf8.decode(bytes.subarray(start, at));
    } catch {
      return fail('malformed');
    }
  };
  const reference = (index: number): string => {
    const s = dictionary.strings[index];
    if (s === undefined) fail('malformed');
    return s;
  };
  const str = (depth: number): string => {
    const value = read(depth);
    if (typeof value !== 'string') fail('malformed');
    return value;
  };
  const array = (n: number, depth: number): unknown[] => {
    const items = new Array<unknown>(count(n, 1));
    for (let i = 0; i < n; i++) items[i] = read(depth + 1);
    return items;
  };
  const object = (n: number, depth: number): Record<string, unknown> => {
    count(n, 2);
    const record: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = str(depth + 1);
      const value = read(depth + 1);
      // An own data property whatever the key (`__proto__` included), as JSON.parse makes it.
      if (key === '__proto__')
        Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
      else record[key] = value;
    }
    return record;
  };

  function read(depth: number): unknown {
    if (depth > MAX_VALUE_DEPTH) fail('malformed');
    const tag = byte();
    if (tag >= OBJ_INLINE) return object(tag - OBJ_INLINE, depth);
    if (tag >= ARR_INLINE) return array(tag - ARR_INLINE, depth);
    if (tag >= STR_INLINE) return text(tag - STR_INLINE);
    if (tag >= UINT_INLINE) return tag - UINT_INLINE;
    if (tag >= REF_INLINE) return reference(tag - REF_INLINE);
    switch (tag) {
      case NULL:
        return null;
      case FALSE:
        return false;
      case TRUE:
        return true;
      case FLOAT64: {
        if (end - at < 8) fail('malformed');
        const value = Buffer.from(bytes.buffer, bytes.byteOffset + at, 8).readDoubleBE(0);
        at += 8;
        if (!Number.isFinite(value)) fail('malformed');
        return value;
      }
      case UINT:
        return varint();
      case NEGINT:
        return -varint() - 1;
      case STR:
        return text(varint());
      case ARR:
        return array(varint(), depth);
      case OBJ:
        return object(varint(), depth);
      case REF:
        return reference(varint());
      case STR16: {
        const units = count(varint(), 2);
        let s = '';
        for (let i = 0; i < units; i++, at += 2) s += String.fromCharCode(bytes[at]! | (bytes[at + 1]! << 8));
        return s;
      }
      case AFTER: {
        if (dictionary.flow === '') fail('malformed');
        const delay = str(depth + 1);
        return `${AFTER_PREFIX}${delay}.${dictionary.flow}.${str(depth + 1)}`;
      }
      default:
        return fail('malformed');
    }
  }

  const value = read(0);
  if (at !== end) fail('malformed');
  return value;
}
