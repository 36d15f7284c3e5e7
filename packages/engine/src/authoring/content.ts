/**
 * Builders of the content blocks a flow's result carries (`contract/content.ts`):
 * `text()`, `image()`, `audio()`, `embeddedResource()` and `resourceLink()`, for
 * `defineFlow({ result })`. Binary data may be given as bytes (encoded to base64
 * here) or as base64 already. One block per call, the MCP wire shape, nothing else.
 */
import type {
  AudioContent,
  ContentAnnotations,
  EmbeddedResource,
  ImageContent,
  ResourceContents,
  ResourceLink,
  TextContent,
} from '../contract/content.js';

/** Bytes as base64; a string is taken to be base64 already. */
function base64(data: string | Uint8Array): string {
  return typeof data === 'string'
    ? data
    : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
}

function annotated<T extends object>(block: T, annotations: ContentAnnotations | undefined): T {
  return annotations ? { ...block, annotations } : block;
}

/** `{ type: 'text', text }` */
export function text(value: string, annotations?: ContentAnnotations): TextContent {
  return annotated({ type: 'text', text: value }, annotations);
}

/**
 * `{ type: 'image', data: '<base64>', mimeType }`
 *
 * @example `image(readFileSync('chart.png'), 'image/png')`
 */
export function image(data: string | Uint8Array, mimeType: string, annotations?: ContentAnnotations): ImageContent {
  return annotated({ type: 'image', data: base64(data), mimeType }, annotations);
}

/** `{ type: 'audio', data: '<base64>', mimeType }` (e.g. `audio/wav`). */
export function audio(data: string | Uint8Array, mimeType: string, annotations?: ContentAnnotations): AudioContent {
  return annotated({ type: 'audio', data: base64(data), mimeType }, annotations);
}

/**
 * `{ type: 'resource', resource: { uri, mimeType?, text } }`, or with `blob` (bytes, or base64 in
 * `blob`) for binary contents.
 *
 * @example `embeddedResource({ uri: 'test://doc', mimeType: 'text/plain', text: 'Hello' })`
 */
export function embeddedResource(
  resource: ResourceContents | { readonly uri: string; readonly mimeType?: string; readonly bytes: Uint8Array },
  annotations?: ContentAnnotations,
): EmbeddedResource {
  const contents: ResourceContents =
    'bytes' in resource
      ? {
          uri: resource.uri,
          ...(resource.mimeType ? { mimeType: resource.mimeType } : {}),
          blob: base64(resource.bytes),
        }
      : resource;
  return annotated({ type: 'resource', resource: contents }, annotations);
}

/** `{ type: 'resource_link', uri, name, … }`: a resource the client may read (or fetch) itself. */
export function resourceLink(link: Omit<ResourceLink, 'type'>): ResourceLink {
  return { type: 'resource_link', ...link };
}
