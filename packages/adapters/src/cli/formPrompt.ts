/**
 * The terminal side of a form elicitation for `baton call`: the restricted
 * elicitation schema (a flat object of string, number/integer, boolean,
 * single- and multi-select enum fields) turned into one prompt per field,
 * with each typed answer checked against the field's schema. Everything
 * here is pure except {@link askForm}, which talks through a {@link PromptIO}
 * so it can be driven by a script in tests. At any prompt `:decline`
 * declines the form and `:cancel` cancels it.
 */

/** One option of an enum field: the value sent and the label shown. */
export interface Choice {
  readonly value: string;
  readonly label: string;
}

/** A titled option as the schema spells it (`oneOf` / `anyOf` of `{ const, title }`). */
interface TitledOption {
  const: string;
  title?: string;
}

/** A property of `requestedSchema`, loosely typed (the server may send more than the spec allows). */
export interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  minLength?: number;
  maxLength?: number;
  format?: string;
  pattern?: string;
  enum?: string[];
  enumNames?: string[];
  oneOf?: TitledOption[];
  anyOf?: TitledOption[];
  minimum?: number;
  maximum?: number;
  items?: { type?: string; enum?: string[]; oneOf?: TitledOption[]; anyOf?: TitledOption[] };
  minItems?: number;
  maxItems?: number;
}

/** The form's `requestedSchema`. */
export interface RequestedSchema {
  type?: string;
  properties?: Record<string, FieldSchema>;
  required?: string[];
}

/** One field to prompt for. */
export interface Field {
  readonly name: string;
  readonly schema: FieldSchema;
  readonly required: boolean;
}

/** A value a form field can hold. */
export type FieldValue = string | number | boolean | string[];

/** The outcome of parsing one answer. */
export type Answer = { ok: true; value: FieldValue } | { ok: true; skip: true } | { ok: false; reason: string };

/** What the user can type at any prompt instead of an answer. */
export const DECLINE = ':decline';
export const CANCEL = ':cancel';

/** The fields of a form, in the schema's order. */
export function fieldsOf(schema: RequestedSchema | undefined): Field[] {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, field]) => ({
    name,
    schema: field ?? {},
    required: required.has(name),
  }));
}

function titled(options: TitledOption[] | undefined): Choice[] | undefined {
  if (!Array.isArray(options) || options.length === 0) return undefined;
  return options.map((o) => ({ value: String(o.const), label: o.title ?? String(o.const) }));
}

/** The options of a single-select field, or of a multi-select field's items; undefined for free input. */
export function choicesOf(schema: FieldSchema): Choice[] | undefined {
  const source = schema.type === 'array' ? (schema.items ?? {}) : schema;
  if (Array.isArray(source.enum)) {
    const names = schema.type === 'array' ? undefined : schema.enumNames;
    return source.enum.map((value, i) => ({ value: String(value), label: names?.[i] ?? String(value) }));
  }
  return titled(source.oneOf) ?? titled(source.anyOf);
}

function isMulti(schema: FieldSchema): boolean {
  return schema.type === 'array';
}

/** How a value reads back at the prompt (defaults, summaries). */
export function showValue(schema: FieldSchema, value: unknown): string {
  if (schema.type === 'boolean') return value === true ? 'yes' : value === false ? 'no' : String(value);
  if (Array.isArray(value)) return value.map(String).join(', ');
  return String(value);
}

function hintOf(field: Field): string {
  const s = field.schema;
  const choices = choicesOf(s);
  const parts: string[] = [];
  if (choices) {
    parts.push(isMulti(s) ? `numbers or values, comma-separated` : `1-${choices.length} or a value`);
    if (isMulti(s) && s.minItems !== undefined) parts.push(`at least ${s.minItems}`);
    if (isMulti(s) && s.maxItems !== undefined) parts.push(`at most ${s.maxItems}`);
  } else if (s.type === 'boolean') {
    parts.push('yes/no');
  } else if (s.type === 'number' || s.type === 'integer') {
    parts.push(s.type === 'integer' ? 'whole number' : 'number');
    if (s.minimum !== undefined) parts.push(`>= ${s.minimum}`);
    if (s.maximum !== undefined) parts.push(`<= ${s.maximum}`);
  } else {
    if (s.format) parts.push(s.format === 'date' ? 'date YYYY-MM-DD' : s.format);
    if (s.minLength !== undefined && s.minLength > 1) parts.push(`at least ${s.minLength} characters`);
    if (s.maxLength !== undefined) parts.push(`at most ${s.maxLength} characters`);
  }
  parts.push(field.required ? 'required' : 'optional');
  return parts.join(', ');
}

/**
 * The lines shown before a field's prompt (its description and numbered
 * options) and the prompt itself, e.g. `confirm - Deploy now? [yes/no, required]: `.
 */
export function promptFor(field: Field): { lines: string[]; prompt: string } {
  const s = field.schema;
  const label = s.title && s.title !== field.name ? `${field.name} (${s.title})` : field.name;
  const described = s.description ? `${label} - ${s.description}` : label;
  const choices = choicesOf(s);
  const lines = choices
    ? [`    ${choices.map((c, i) => `${i + 1}) ${c.label}${c.label !== c.value ? ` [${c.value}]` : ''}`).join('  ')}`]
    : [];
  const fallback = s.default !== undefined ? ` (Enter for ${showValue(s, s.default)})` : '';
  return { lines, prompt: `  ${described} [${hintOf(field)}]${fallback}: ` };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function validDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return date.getUTCFullYear() === Number(m[1]) && date.getUTCMonth() === Number(m[2]) - 1;
}

function checkFormat(format: string | undefined, text: string): string | undefined {
  switch (format) {
    case 'email':
      return EMAIL.test(text) ? undefined : 'expected an email address like name@example.com';
    case 'uri':
      try {
        return /^[a-z][a-z0-9+.-]*:/i.test(text) && new URL(text)
          ? undefined
          : 'expected a URI like https://example.com';
      } catch {
        return 'expected a URI like https://example.com';
      }
    case 'date':
      return validDate(text) ? undefined : 'expected a date as YYYY-MM-DD';
    case 'date-time':
      return DATE_TIME.test(text) && !Number.isNaN(Date.parse(text)) && validDate(text.slice(0, 10))
        ? undefined
        : 'expected a date-time like 2026-07-28T14:30:00Z';
    default:
      return undefined;
  }
}

function pickChoice(choices: Choice[], token: string): Choice | undefined {
  if (/^\d+$/.test(token)) {
    const index = Number(token);
    if (index >= 1 && index <= choices.length) return choices[index - 1];
  }
  return (
    choices.find((c) => c.value === token) ??
    choices.find((c) => c.value.toLowerCase() === token.toLowerCase() || c.label.toLowerCase() === token.toLowerCase())
  );
}

function listChoices(choices: Choice[]): string {
  return choices.map((c, i) => `${i + 1}) ${c.value}`).join(', ');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * Parse and check one typed answer against its field. Empty input takes the
 * default, skips an optional field, or is refused for a required one.
 */
export function parseAnswer(field: Field, input: string): Answer {
  const s = field.schema;
  const text = input.trim();
  if (text === '') {
    if (s.default !== undefined) return { ok: true, value: s.default as FieldValue };
    return field.required ? { ok: false, reason: `${field.name} is required` } : { ok: true, skip: true };
  }
  const choices = choicesOf(s);
  if (isMulti(s)) {
    const tokens = text
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== '');
    const values: string[] = [];
    for (const token of tokens) {
      const choice = choices ? pickChoice(choices, token) : { value: token, label: token };
      if (!choice) return { ok: false, reason: `"${token}" is not one of ${listChoices(choices!)}` };
      if (!values.includes(choice.value)) values.push(choice.value);
    }
    if (s.minItems !== undefined && values.length < s.minItems) {
      return { ok: false, reason: `choose at least ${plural(s.minItems, 'option')}` };
    }
    if (s.maxItems !== undefined && values.length > s.maxItems) {
      return { ok: false, reason: `choose at most ${plural(s.maxItems, 'option')}` };
    }
    return { ok: true, value: values };
  }
  if (choices) {
    const choice = pickChoice(choices, text);
    return choice
      ? { ok: true, value: choice.value }
      : { ok: false, reason: `expected one of ${listChoices(choices)}` };
  }
  switch (s.type) {
    case 'boolean': {
      const lower = text.toLowerCase();
      if (['y', 'yes', 'true', '1'].includes(lower)) return { ok: true, value: true };
      if (['n', 'no', 'false', '0'].includes(lower)) return { ok: true, value: false };
      return { ok: false, reason: 'expected yes or no' };
    }
    case 'number':
    case 'integer': {
      const value = Number(text);
      if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) || !Number.isFinite(value)) {
        return { ok: false, reason: `expected a ${s.type === 'integer' ? 'whole number' : 'number'}` };
      }
      if (s.type === 'integer' && !Number.isInteger(value)) return { ok: false, reason: 'expected a whole number' };
      if (s.minimum !== undefined && value < s.minimum) return { ok: false, reason: `must be at least ${s.minimum}` };
      if (s.maximum !== undefined && value > s.maximum) return { ok: false, reason: `must be at most ${s.maximum}` };
      return { ok: true, value };
    }
    default: {
      const length = [...text].length;
      if (s.minLength !== undefined && length < s.minLength) {
        return { ok: false, reason: `must be at least ${plural(s.minLength, 'character')}` };
      }
      if (s.maxLength !== undefined && length > s.maxLength) {
        return { ok: false, reason: `must be at most ${plural(s.maxLength, 'character')}` };
      }
      const formatError = checkFormat(s.format, text);
      if (formatError) return { ok: false, reason: formatError };
      if (s.pattern !== undefined) {
        let pattern: RegExp | undefined;
        try {
          pattern = new RegExp(s.pattern, 'u');
        } catch {
          pattern = undefined; // an unusable pattern is the server's problem, not the user's
        }
        if (pattern && !pattern.test(text)) return { ok: false, reason: `must match ${s.pattern}` };
      }
      return { ok: true, value: text };
    }
  }
}

/** How {@link askForm} talks to the user. */
export interface PromptIO {
  /** Print one line. */
  say(line: string): void;
  /** Show a prompt and resolve with the next line typed. */
  ask(prompt: string): Promise<string>;
}

/** The user's answer to a form, as an elicitation result. */
export type FormOutcome =
  | { action: 'accept'; content: Record<string, FieldValue> }
  | { action: 'decline' }
  | { action: 'cancel' };

/** The intro line of every form. */
export const FORM_INTRO = `(answer each field; Enter skips an optional one or takes its default; ${DECLINE} declines the form, ${CANCEL} cancels it)`;

/** Prompt for every field in turn, re-prompting with a one-line reason until each answer is valid. */
export async function askForm(schema: RequestedSchema | undefined, io: PromptIO): Promise<FormOutcome> {
  io.say(`  ${FORM_INTRO}`);
  const content: Record<string, FieldValue> = {};
  for (const field of fieldsOf(schema)) {
    const { lines, prompt } = promptFor(field);
    for (const line of lines) io.say(line);
    for (;;) {
      const input = await io.ask(prompt);
      const command = input.trim().toLowerCase();
      if (command === DECLINE) return { action: 'decline' };
      if (command === CANCEL) return { action: 'cancel' };
      const answer = parseAnswer(field, input);
      if (!answer.ok) {
        io.say(`  ! ${answer.reason}`);
        continue;
      }
      if (!('skip' in answer)) content[field.name] = answer.value;
      break;
    }
  }
  return { action: 'accept', content };
}
