/**
 * The decision form, from the decision's elicitation schema (the restricted
 * JSON Schema of MCP form elicitation that `toElicitationSchema` produces):
 * every field kind Baton allows renders as a plain HTML control with the
 * schema's title (else the field name), description, default and bounds:
 * strings (with `format` email, uri, date, date-time; `minLength`,
 * `maxLength`; long ones as a text area), numbers and integers (`minimum`,
 * `maximum`), booleans (Yes / No, so that "not answered" is not "No"),
 * single-choice enums (`enum`, `oneOf` with titles, `enumNames`) and
 * multi-choice enums (arrays of enum strings, as checkboxes). The browser's
 * own checks are a convenience: `readAnswer` turns the submitted fields
 * back into typed content without judging it, and the engine validates that
 * content against the decision's schema, as for `baton_decide`.
 */
import type { ElicitationSchema } from '@baton/engine';
import { html, type SafeHtml } from './html.js';

/** What was submitted, field by field (strings; arrays for multi-choice), to show again. */
export type SubmittedFields = Readonly<Record<string, string | readonly string[]>>;

type Property = ElicitationSchema['properties'][string];

/** Prefix of the form fields' names (so that `_csrf` and `_action` never collide with a field). */
const FIELD = 'f.';

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const num = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

/** The choices of a single- or multi-choice field: value and label. */
function choices(prop: Property): { value: string; label: string }[] {
  const source = prop.type === 'array' ? (prop.items as Property | undefined) : prop;
  if (!source) return [];
  if (Array.isArray(source.oneOf)) {
    return (source.oneOf as { const?: unknown; title?: unknown }[])
      .filter((option) => typeof option.const === 'string')
      .map((option) => ({ value: option.const as string, label: str(option.title) ?? (option.const as string) }));
  }
  if (Array.isArray(source.enum)) {
    const names = Array.isArray(source.enumNames) ? (source.enumNames as unknown[]) : [];
    return (source.enum as unknown[])
      .filter((value): value is string => typeof value === 'string')
      .map((value, i) => ({ value, label: str(names[i]) ?? value }));
  }
  return [];
}

/** What a field holds before anything is submitted: its default, as form strings. */
function initial(prop: Property): string | readonly string[] | undefined {
  const value = prop.default;
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return String(value);
}

const INPUT_TYPES: Record<string, string> = { email: 'email', uri: 'url', date: 'date' };

/** One field's control. */
function control(name: string, prop: Property, required: boolean, value: string | readonly string[] | undefined) {
  const id = `field-${name}`;
  const field = `${FIELD}${name}`;
  const one = typeof value === 'string' ? value : undefined;
  const many = Array.isArray(value) ? (value as readonly string[]) : one !== undefined ? [one] : [];
  const options = choices(prop);
  if (prop.type === 'array') {
    return html`<div class="choices" id="${id}">${options.map(
      (option) =>
        html`<label class="choice"><input type="checkbox" name="${field}" value="${option.value}"${many.includes(option.value) ? html` checked` : ''}> ${option.label}</label>`,
    )}</div>`;
  }
  if (prop.type === 'boolean') {
    return html`<div class="choices" id="${id}" role="radiogroup">
<label class="choice"><input type="radio" name="${field}" value="true"${one === 'true' ? html` checked` : ''}${required ? html` required` : ''}> Yes</label>
<label class="choice"><input type="radio" name="${field}" value="false"${one === 'false' ? html` checked` : ''}> No</label>
</div>`;
  }
  if (options.length > 0) {
    return html`<select id="${id}" name="${field}"${required ? html` required` : ''}>
<option value=""${one === undefined || one === '' ? html` selected` : ''}>Choose…</option>
${options.map((option) => html`<option value="${option.value}"${one === option.value ? html` selected` : ''}>${option.label}</option>`)}
</select>`;
  }
  if (prop.type === 'number' || prop.type === 'integer') {
    const min = num(prop.minimum);
    const max = num(prop.maximum);
    return html`<input id="${id}" name="${field}" type="number" inputmode="${prop.type === 'integer' ? 'numeric' : 'decimal'}" step="${prop.type === 'integer' ? '1' : 'any'}"${min !== undefined ? html` min="${min}"` : ''}${max !== undefined ? html` max="${max}"` : ''} value="${one ?? ''}"${required ? html` required` : ''}>`;
  }
  const format = str(prop.format);
  const minLength = num(prop.minLength);
  const maxLength = num(prop.maxLength);
  const bounds = html`${minLength !== undefined ? html` minlength="${minLength}"` : ''}${maxLength !== undefined ? html` maxlength="${maxLength}"` : ''}${required ? html` required` : ''}`;
  if (format === undefined && (maxLength === undefined || maxLength > 120)) {
    return html`<textarea id="${id}" name="${field}" rows="3"${bounds}>${one ?? ''}</textarea>`;
  }
  const type = (format && INPUT_TYPES[format]) ?? 'text';
  const placeholder = format === 'date-time' ? html` placeholder="2026-12-31T17:00:00Z"` : '';
  return html`<input id="${id}" name="${field}" type="${type}"${placeholder} value="${one ?? ''}"${bounds}>`;
}

/** A line saying a field's bounds in words, when it has any. */
function hint(prop: Property): string | undefined {
  const parts: string[] = [];
  const min = num(prop.minimum ?? prop.minLength ?? prop.minItems);
  const max = num(prop.maximum ?? prop.maxLength ?? prop.maxItems);
  const unit =
    prop.type === 'string' ? ' characters' : prop.type === 'array' ? ' choices' : prop.type === 'integer' ? '' : '';
  if (min !== undefined && max !== undefined) parts.push(`${min} to ${max}${unit}`);
  else if (min !== undefined) parts.push(`at least ${min}${unit}`);
  else if (max !== undefined) parts.push(`at most ${max}${unit}`);
  if (prop.type === 'integer') parts.push('a whole number');
  const format = str(prop.format);
  if (format)
    parts.push(
      { email: 'an e-mail address', uri: 'a URL', date: 'a date', 'date-time': 'a date and time (ISO 8601)' }[format] ??
        format,
    );
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/** What was wrong with one field of a refused answer (the engine's words). */
export interface FieldIssue {
  readonly field: string;
  readonly hint: string;
}

/** The form's fields for `schema`, showing `submitted` (else the defaults), each with its `issues`. */
export function renderFields(
  schema: ElicitationSchema,
  submitted?: SubmittedFields,
  issues: readonly FieldIssue[] = [],
): SafeHtml {
  const required = new Set(schema.required ?? []);
  return html`${Object.entries(schema.properties).map(([name, prop]) => {
    const wrong = issues.filter(
      (issue) => issue.field === name || issue.field.startsWith(`${name}[`) || issue.field.startsWith(`${name}.`),
    );
    const value = submitted ? submitted[name] : initial(prop);
    const title = str(prop.title) ?? str(prop.description) ?? name;
    const description = str(prop.title) !== undefined ? str(prop.description) : undefined;
    const bounds = hint(prop);
    const grouped = prop.type === 'boolean' || prop.type === 'array';
    const mark = required.has(name)
      ? html` <span class="req" aria-hidden="true">*</span>`
      : /optional/i.test(title)
        ? ''
        : html` <span class="opt">(optional)</span>`;
    const label = grouped
      ? html`<span class="label" id="label-${name}">${title}${mark}</span>`
      : html`<label class="label" for="field-${name}">${title}${mark}</label>`;
    return html`<div class="field${wrong.length > 0 ? ' invalid' : ''}" data-field="${name}" data-kind="${prop.type}">
${label}
${description ? html`<p class="hint">${description}</p>` : ''}
${control(name, prop, required.has(name), value)}
${wrong.map((issue) => html`<p class="issue" role="alert">${issue.hint}</p>`)}
${bounds ? html`<p class="hint bounds">${bounds}</p>` : ''}
</div>`;
  })}`;
}

/** The submitted fields (for showing them again), read from a form body. */
export function submittedFields(schema: ElicitationSchema, form: URLSearchParams): SubmittedFields {
  const out: Record<string, string | readonly string[]> = {};
  for (const [name, prop] of Object.entries(schema.properties)) {
    const key = `${FIELD}${name}`;
    if (prop.type === 'array') out[name] = form.getAll(key);
    else if (form.has(key)) out[name] = form.get(key)!;
  }
  return out;
}

/**
 * The content of a submitted form, typed as the schema says (numbers, booleans, arrays), left
 * for the engine to validate: an empty field is left out, a number that does not parse stays a
 * string (so the engine says what is wrong with it), fields the schema does not name are ignored.
 */
export function readAnswer(schema: ElicitationSchema, fields: SubmittedFields): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(schema.properties)) {
    const value = fields[name];
    if (value === undefined) continue;
    if (prop.type === 'array') {
      const list = Array.isArray(value) ? value : [value];
      if (list.length > 0 || (schema.required ?? []).includes(name)) content[name] = [...list];
      continue;
    }
    const text = typeof value === 'string' ? value : (value[0] ?? '');
    if (text === '') continue;
    if (prop.type === 'boolean') content[name] = text === 'true' ? true : text === 'false' ? false : text;
    else if (prop.type === 'number' || prop.type === 'integer') {
      const parsed = Number(text.trim());
      content[name] = text.trim() !== '' && Number.isFinite(parsed) ? parsed : text;
    } else content[name] = text;
  }
  return content;
}
