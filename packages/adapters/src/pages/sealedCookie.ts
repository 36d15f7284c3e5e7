/**
 * Encrypted, integrity-protected cookies for the decision pages: a value is
 * a JWT encrypted with jose (`dir` + `A256GCM`) under a subkey of the
 * server's key ring (`BATON_KEYS`), derived like every other Baton subkey
 * (HKDF-SHA256, `RingKey.subkey`), one purpose per cookie kind, so a login
 * cookie never opens as a session and no other Baton key ever opens either.
 * The minting key's id travels in the JWE header: any key of the ring opens a
 * cookie, so a rotation signs nobody out before the cookie expires. Every
 * cookie is `HttpOnly; SameSite=Lax; Path=/`, `Secure` (and named with the
 * `__Host-` prefix) unless the pages are served over plain http on loopback,
 * and carries an expiry both in its JWT (`exp`, checked) and as `Max-Age`.
 * Stateless: any instance holding the same keys reads any cookie.
 */
import type { KeyRing } from '@baton/engine';
import { EncryptJWT, type JWTPayload, jwtDecrypt } from 'jose';

/** One kind of sealed cookie: its name, subkey purpose and lifetime. */
export interface SealedCookie<T extends object> {
  /** The cookie's name as sent (with `__Host-` when secure). */
  readonly name: string;
  /** A `Set-Cookie` value holding `value`, valid for the cookie's lifetime. */
  seal(value: T): Promise<string>;
  /** The value in the request's cookie, or `undefined` when absent, expired, forged or unreadable. */
  open(request: Request): Promise<T | undefined>;
  /** A `Set-Cookie` value that removes the cookie. */
  clear(): string;
}

/** Options of {@link sealedCookie}. */
export interface SealedCookieOptions {
  readonly keys: KeyRing;
  /** The cookie's base name, e.g. `baton_session`. */
  readonly name: string;
  /** The subkey purpose, distinct per cookie kind (e.g. `page-session`). */
  readonly purpose: string;
  /** Lifetime, in seconds. */
  readonly maxAgeSeconds: number;
  /** Whether to mark it `Secure` (https pages) and prefix it `__Host-`. */
  readonly secure: boolean;
}

/** The value of cookie `name` in a `Cookie` header, or `undefined`. */
export function cookieValue(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** Longest cookie value read (a browser keeps 4096 bytes per cookie anyway). */
const MAX_COOKIE_CHARS = 4096;

/** Create one kind of sealed cookie. */
export function sealedCookie<T extends object>(options: SealedCookieOptions): SealedCookie<T> {
  const name = options.secure ? `__Host-${options.name}` : options.name;
  const purpose = `blob:baton.${options.purpose}` as const;
  const attributes = `Path=/; HttpOnly; SameSite=Lax${options.secure ? '; Secure' : ''}`;
  return {
    name,
    async seal(value) {
      const key = options.keys.current;
      const token = await new EncryptJWT({ v: value } as JWTPayload)
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: key.kid, typ: options.purpose })
        .setIssuedAt()
        .setExpirationTime(`${options.maxAgeSeconds}s`)
        .encrypt(key.subkey(purpose));
      return `${name}=${token}; ${attributes}; Max-Age=${options.maxAgeSeconds}`;
    },
    async open(request) {
      const token = cookieValue(request, name);
      if (!token || token.length > MAX_COOKIE_CHARS) return undefined;
      try {
        const { payload } = await jwtDecrypt(
          token,
          (header) => {
            const key = typeof header.kid === 'string' ? options.keys.byKid(header.kid) : undefined;
            if (!key) throw new Error('unknown key');
            return key.subkey(purpose);
          },
          { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'], typ: options.purpose },
        );
        const value = payload.v;
        return typeof value === 'object' && value !== null ? (value as T) : undefined;
      } catch {
        return undefined;
      }
    },
    clear: () => `${name}=; ${attributes}; Max-Age=0`,
  };
}
