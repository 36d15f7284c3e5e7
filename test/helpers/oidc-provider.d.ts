/**
 * oidc-provider 9 ships no type declarations: the little the test helper uses of it, typed.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  /** An OpenID Provider (see https://github.com/panva/node-oidc-provider). */
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    /** Whether to trust X-Forwarded-* headers. */
    proxy: boolean;
    /** The request listener for `node:http`. */
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
