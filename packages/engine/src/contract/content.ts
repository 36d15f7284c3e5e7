/**
 * The content a finished flow returns, typed after MCP's content blocks
 * (2026-07-28): text, image, audio, an embedded resource and a resource link.
 * Types only, no MCP import: adapters hand these to the SDK as they are, so
 * a `tools/call` result carries them in `content`, a `prompts/get` result one
 * message per block, and a `resources/read` result turns them into resource
 * contents (`text` or base64 `blob`, with their `mimeType`). The builders
 * that make them are in `authoring/content.ts`.
 */

/** Optional hints on any block (MCP `annotations`). */
export type ContentAnnotations = {
  readonly audience?: ('user' | 'assistant')[];
  /** 0 (least) to 1 (most important). */
  readonly priority?: number;
  /** ISO 8601. */
  readonly lastModified?: string;
};

type BlockBase = {
  readonly annotations?: ContentAnnotations;
  readonly _meta?: Record<string, unknown>;
};

/** Wire: `{ type: 'text', text: 'Hello' }` */
export type TextContent = BlockBase & {
  readonly type: 'text';
  readonly text: string;
};

/** Wire: `{ type: 'image', data: '<base64>', mimeType: 'image/png' }` */
export type ImageContent = BlockBase & {
  readonly type: 'image';
  /** Base64 (standard alphabet). */
  readonly data: string;
  readonly mimeType: string;
};

/** Wire: `{ type: 'audio', data: '<base64>', mimeType: 'audio/wav' }` */
export type AudioContent = BlockBase & {
  readonly type: 'audio';
  /** Base64 (standard alphabet). */
  readonly data: string;
  readonly mimeType: string;
};

/** A resource's contents as text: `{ uri, mimeType?, text }`. */
export type TextResourceContents = {
  readonly uri: string;
  readonly mimeType?: string;
  readonly text: string;
  readonly _meta?: Record<string, unknown>;
};

/** A resource's contents as bytes: `{ uri, mimeType?, blob: '<base64>' }`. */
export type BlobResourceContents = {
  readonly uri: string;
  readonly mimeType?: string;
  /** Base64 (standard alphabet). */
  readonly blob: string;
  readonly _meta?: Record<string, unknown>;
};

/** Contents of one resource, text or bytes. */
export type ResourceContents = TextResourceContents | BlobResourceContents;

/** Wire: `{ type: 'resource', resource: { uri: 'test://doc', mimeType: 'text/plain', text: '…' } }` */
export type EmbeddedResource = BlockBase & {
  readonly type: 'resource';
  readonly resource: ResourceContents;
};

/** Wire: `{ type: 'resource_link', uri: 'file:///report.pdf', name: 'report.pdf', mimeType?: 'application/pdf' }` */
export type ResourceLink = BlockBase & {
  readonly type: 'resource_link';
  readonly uri: string;
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly mimeType?: string;
  /** Bytes. */
  readonly size?: number;
};

/** A content block of a result: every kind MCP results carry. */
export type ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink;
