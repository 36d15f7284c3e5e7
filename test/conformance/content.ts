/**
 * The fixtures of the official conformance suite's core tool, prompt, resource
 * and completion scenarios, every one a Baton flow (`fixtures.ts` serves them
 * with the others). Names, texts and URIs follow the scenario descriptions of
 * 0.2.0-alpha.12 ("Required server fixtures"):
 *
 * - tools: `test_simple_text` (tools-call-simple-text), `test_image_content` (tools-call-image),
 *   `test_audio_content` (tools-call-audio), `test_embedded_resource`
 *   (tools-call-embedded-resource), `test_multiple_content_types` (tools-call-mixed-content),
 *   `test_error_handling` (tools-call-error: the flow fails, a tool error result),
 *   `test_tool_with_progress` (tools-call-with-progress: `progress()` 0, 50, 100 of 100, ~50 ms
 *   apart), `json_schema_2020_12_tool` (json-schema-2020-12: the author's JSON Schema, listed verbatim);
 * - prompts: `test_simple_prompt`, `test_prompt_with_arguments` (`arg1` completes: completion-complete),
 *   `test_prompt_with_embedded_resource`, `test_prompt_with_image`;
 * - resources: `test://static-text`, `test://static-binary` (a PNG blob), the template
 *   `test://template/{id}/data` (JSON; `id` completes). resources-list, caching (its resources part)
 *   and sep-2164-resource-not-found read these too.
 */
import type { FlowExposure } from '@baton/adapters';
import {
  audio,
  defineFlow,
  defineInputs,
  embeddedResource,
  type Flow,
  FlowError,
  type FlowResult,
  image,
  progress,
  text,
} from '@baton/engine';
import { fromPromise, setup } from 'xstate';
import { z } from 'zod';

/** A 1x1 red pixel PNG, base64. */
const RED_PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

/** A minimal WAV: 8 kHz, 8-bit mono, 8 samples of silence. */
function silentWav(): Uint8Array {
  const samples = 8;
  const wav = Buffer.alloc(44 + samples);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + samples, 4);
  wav.write('WAVEfmt ', 8, 'ascii');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(8000, 24); // sample rate
  wav.writeUInt32LE(8000, 28); // byte rate
  wav.writeUInt16LE(1, 32); // block align
  wav.writeUInt16LE(8, 34); // bits per sample
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(samples, 40);
  wav.fill(128, 44); // 8-bit silence
  return wav;
}

/**
 * A flow that finishes at once with `result` of its (parsed) arguments: the machine's output
 * is its input, the result is built by `defineFlow({ result })`.
 */
function answering<TArgs extends z.ZodObject>(
  name: string,
  description: string,
  args: TArgs,
  result: (args: z.output<TArgs>) => FlowResult | string,
  more: { inputSchema?: Record<string, unknown>; complete?: Flow['completers'] } = {},
) {
  const machine = setup({
    types: { input: {} as z.output<TArgs>, context: {} as z.output<TArgs>, output: {} as z.output<TArgs> },
  }).createMachine({
    id: name,
    context: ({ input }) => input,
    initial: 'done',
    states: { done: { type: 'final', output: ({ context }) => context } },
  });
  return defineFlow({ name, description, args, inputs: defineInputs({}), machine, result, ...more });
}

const noArgs = z.object({});

// ─── Tools ───

export const simpleText = answering(
  'test_simple_text',
  'Conformance fixture: returns a simple text response.',
  noArgs,
  () => 'This is a simple text response for testing.',
);

export const imageContent = answering(
  'test_image_content',
  'Conformance fixture: returns a 1x1 red PNG image.',
  noArgs,
  () => ({ content: [image(RED_PIXEL_PNG, 'image/png')] }),
);

export const audioContent = answering(
  'test_audio_content',
  'Conformance fixture: returns a short silent WAV.',
  noArgs,
  () => ({ content: [audio(silentWav(), 'audio/wav')] }),
);

export const embeddedResourceContent = answering(
  'test_embedded_resource',
  'Conformance fixture: returns an embedded text resource.',
  noArgs,
  () => ({
    content: [
      embeddedResource({
        uri: 'test://embedded-resource',
        mimeType: 'text/plain',
        text: 'This is an embedded resource content.',
      }),
    ],
  }),
);

export const multipleContentTypes = answering(
  'test_multiple_content_types',
  'Conformance fixture: returns text, an image and an embedded JSON resource.',
  noArgs,
  () => ({
    content: [
      text('Multiple content types test:'),
      image(RED_PIXEL_PNG, 'image/png'),
      embeddedResource({
        uri: 'test://mixed-content-resource',
        mimeType: 'application/json',
        text: JSON.stringify({ test: 'data', value: 123 }),
      }),
    ],
  }),
);

/** `test_error_handling`: its work always fails with a `FlowError`, which the tool answers as `isError`. */
export const errorHandling = defineFlow({
  name: 'test_error_handling',
  description: 'Conformance fixture: always fails, answered as a tool error result.',
  args: noArgs,
  inputs: defineInputs({}),
  machine: setup({
    actors: {
      failing: fromPromise<never>(async () => {
        throw new FlowError('This tool intentionally returns an error for testing');
      }),
    },
  }).createMachine({
    id: 'test_error_handling',
    initial: 'working',
    states: {
      working: { invoke: { id: 'failing', src: 'failing', onDone: 'done' } },
      done: { type: 'final' },
    },
  }),
});

const pause = fromPromise<void>(() => new Promise((resolve) => setTimeout(resolve, 50)));

/** `test_tool_with_progress`: reports 0, 50 and 100 of 100, about 50 ms apart, then says it is done. */
export const toolWithProgress = defineFlow({
  name: 'test_tool_with_progress',
  description: 'Conformance fixture: reports progress 0/100, 50/100 and 100/100 while it works.',
  args: noArgs,
  inputs: defineInputs({}),
  machine: setup({ types: { output: {} as string }, actors: { pause } }).createMachine({
    id: 'test_tool_with_progress',
    initial: 'starting',
    states: {
      starting: {
        entry: progress({ progress: 0, total: 100 }),
        invoke: { id: 'first', src: 'pause', onDone: 'halfway' },
      },
      halfway: {
        entry: progress({ progress: 50, total: 100 }),
        invoke: { id: 'second', src: 'pause', onDone: 'done' },
      },
      done: {
        type: 'final',
        entry: progress({ progress: 100, total: 100 }),
        output: 'Progress test completed: reported 0, 50 and 100 of 100.',
      },
    },
  }),
});

/** The input schema the json-schema-2020-12 scenario expects, verbatim. */
const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's conditional keyword, never awaited
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
} as const;

/** The same constraints in zod, which validates each call (the JSON Schema above is what is listed). */
const contactArgs = z
  .strictObject({
    name: z.string().optional(),
    address: z.object({ street: z.string().optional(), city: z.string().optional() }).optional(),
    contactMethod: z.enum(['phone', 'email']).optional(),
    phone: z.string().optional(),
    email: z.string().optional(),
  })
  .refine((a) => (a.contactMethod === 'phone' ? a.phone !== undefined : a.email !== undefined), {
    message: 'phone is required when contactMethod is "phone", email otherwise',
  });

export const jsonSchema2020 = answering(
  'json_schema_2020_12_tool',
  'Tool with JSON Schema 2020-12 features',
  contactArgs as unknown as z.ZodObject,
  (args) => `Contact recorded: ${JSON.stringify(args)}`,
  { inputSchema: JSON_SCHEMA_2020_12 },
);

// ─── Prompts ───

export const simplePrompt = answering(
  'test_simple_prompt',
  'Conformance fixture: a simple prompt without arguments.',
  noArgs,
  () => 'This is a simple prompt for testing.',
);

const ARG1_VALUES = ['paris', 'park', 'party', 'test', 'testing'];

export const promptWithArguments = answering(
  'test_prompt_with_arguments',
  'Conformance fixture: a prompt with two arguments; arg1 completes.',
  z.object({
    arg1: z.string().describe('First test argument'),
    arg2: z.string().describe('Second test argument'),
  }),
  ({ arg1, arg2 }) => `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`,
  { complete: { arg1: (value) => ARG1_VALUES.filter((v) => v.startsWith(value)) } },
);

export const promptWithEmbeddedResource = answering(
  'test_prompt_with_embedded_resource',
  'Conformance fixture: a prompt embedding the resource it is given.',
  z.object({ resourceUri: z.string().min(1).describe('URI of the resource to embed') }),
  ({ resourceUri }) => ({
    content: [
      embeddedResource({ uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' }),
      text('Please process the embedded resource above.'),
    ],
  }),
);

export const promptWithImage = answering(
  'test_prompt_with_image',
  'Conformance fixture: a prompt with an image.',
  noArgs,
  () => ({ content: [image(RED_PIXEL_PNG, 'image/png'), text('Please analyze the image above.')] }),
);

// ─── Resources ───

export const staticText = answering(
  'test_static_text',
  'Conformance fixture: a static text resource.',
  noArgs,
  () => 'This is the content of the static text resource.',
);

export const staticBinary = answering(
  'test_static_binary',
  'Conformance fixture: a static binary resource (a PNG).',
  noArgs,
  () => ({ content: [image(RED_PIXEL_PNG, 'image/png')] }),
);

export const templateData = answering(
  'test_template_data',
  'Conformance fixture: a resource template that substitutes its id.',
  z.object({ id: z.string().min(1) }),
  ({ id }) => ({
    content: [],
    structuredContent: { id, templateTest: true, data: `Data for ID: ${id}` },
  }),
  { complete: { id: (value) => ['123', '456', '789'].filter((v) => v.startsWith(value)) } },
);

/** How each fixture of this module is served, by name (a flow not named here is a tool). */
export const exposure: Readonly<Record<string, FlowExposure>> = {
  test_simple_prompt: { tool: false, prompt: true },
  test_prompt_with_arguments: { tool: false, prompt: true },
  test_prompt_with_embedded_resource: { tool: false, prompt: true },
  test_prompt_with_image: { tool: false, prompt: true },
  test_static_text: { tool: false, resource: { uri: 'test://static-text', mimeType: 'text/plain' } },
  test_static_binary: { tool: false, resource: { uri: 'test://static-binary', mimeType: 'image/png' } },
  test_template_data: { tool: false, resource: { uri: 'test://template/{id}/data', mimeType: 'application/json' } },
};

/** Every fixture of this module. */
export const flows: readonly Flow[] = [
  simpleText,
  imageContent,
  audioContent,
  embeddedResourceContent,
  multipleContentTypes,
  errorHandling,
  toolWithProgress,
  jsonSchema2020,
  simplePrompt,
  promptWithArguments,
  promptWithEmbeddedResource,
  promptWithImage,
  staticText,
  staticBinary,
  templateData,
];
