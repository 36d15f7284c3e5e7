import { describe, expect, it } from 'vitest';
import { createRequestStateCodec, generateKey } from '../src/codec/index.js';
import { InvalidRequestStateError } from '../src/errors.js';

const reasonOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestStateError);
    return (error as InvalidRequestStateError).reason;
  }
  throw new Error('expected an InvalidRequestStateError');
};

describe('sealed blobs with associated data', () => {
  const codec = createRequestStateCodec({ keys: [generateKey()] });

  it('open only with the associated data they were sealed with, which they do not store', () => {
    const sealed = codec.sealBlob('outcome of state A', 'outcome', '["jti-A","flow","fid-1"]');
    expect(codec.openBlob(sealed, 'outcome', '["jti-A","flow","fid-1"]')).toBe('outcome of state A');
    expect(Buffer.from(sealed, 'base64url').includes('jti-A')).toBe(false);
    for (const other of ['["jti-B","flow","fid-1"]', '["jti-A","other","fid-1"]', '["jti-A","flow","fid-2"]', '']) {
      expect(reasonOf(() => codec.openBlob(sealed, 'outcome', other))).toBe('bad_integrity');
    }
    expect(reasonOf(() => codec.openBlob(sealed, 'outcome'))).toBe('bad_integrity');
  });

  it('without associated data open only without it (absent and empty are the same)', () => {
    const plain = codec.sealBlob('no binding', 'outcome');
    expect(codec.openBlob(plain, 'outcome')).toBe('no binding');
    expect(codec.openBlob(plain, 'outcome', '')).toBe('no binding');
    expect(reasonOf(() => codec.openBlob(plain, 'outcome', '["jti-A","flow","fid-1"]'))).toBe('bad_integrity');
  });

  it('refuse associated data that is not a string', () => {
    expect(() => codec.sealBlob('x', 'outcome', 42 as unknown as string)).toThrow(TypeError);
    const sealed = codec.sealBlob('x', 'outcome', '42');
    expect(reasonOf(() => codec.openBlob(sealed, 'outcome', 42 as unknown as string))).toBe('bad_integrity');
  });
});
