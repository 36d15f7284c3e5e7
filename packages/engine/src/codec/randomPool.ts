/**
 * Random bytes for jtis and IVs, drawn from a pool that one `randomFillSync`
 * call refills, as the `uuid` package does: a mint needs two small random
 * values, and a call into the CSPRNG per value costs more than the bytes.
 * Each caller gets its own copy; pool bytes are never handed out twice.
 */
import { randomFillSync } from 'node:crypto';

const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

/** `n` (at most 4096) fresh random bytes. */
export function randomBytesFromPool(n: number): Buffer {
  if (offset + n > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const out = Buffer.from(pool.subarray(offset, offset + n));
  offset += n;
  return out;
}
