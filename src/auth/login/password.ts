import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'

export interface ScryptParams {
  /** log2 of the CPU/memory cost N */
  ln: number
  r: number
  p: number
}

/**
 * OWASP's password-storage recommendation lists N=2^14, r=8, p=5 as
 * equivalent to N=2^17, r=8, p=1; this one needs 16 MiB per hash instead of 128.
 */
export const DEFAULT_SCRYPT_PARAMS: ScryptParams = { ln: 14, r: 8, p: 5 }

const KEY_LENGTH = 32
const SALT_LENGTH = 16
// Bounds on what a stored hash may ask for, so a bad users file cannot exhaust memory:
// one hash needs 128 * N * r bytes, at most 128 MiB here.
const MAX_N_TIMES_R = 2 ** 20
const MAX_P = 16
// A 32-byte key is 43 base64 characters without padding; other lengths are refused.
const PHC_PATTERN = /^\$scrypt\$ln=([0-9]{1,2}),r=([0-9]{1,2}),p=([0-9]{1,2})\$([A-Za-z0-9+/]{16,})\$([A-Za-z0-9+/]{43})$/

/** Computes scrypt(password, salt) with these options. */
export type DeriveKey = (password: string, salt: Buffer, keyLength: number, options: ScryptOptions) => Promise<Buffer>

/** scrypt on libuv's thread pool, at the process's priority. */
export const deriveOnThreadPool: DeriveKey = (password, salt, keyLength, options) => new Promise((resolve, reject) => {
  scrypt(password, salt, keyLength, options, (error, key) => {
    if (error === null) resolve(key)
    else reject(error)
  })
})

function derive (password: string, salt: Buffer, keyLength: number, { ln, r, p }: ScryptParams, deriveKey: DeriveKey): Promise<Buffer> {
  const N = 2 ** ln
  return deriveKey(password.normalize('NFC'), salt, keyLength, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 })
}

const toB64 = (buffer: Buffer): string => buffer.toString('base64').replace(/=+$/, '')

/** Hashes a password into a self-describing PHC string: `$scrypt$ln=14,r=8,p=5$<salt>$<hash>`. */
export async function hashPassword (password: string, params: ScryptParams = DEFAULT_SCRYPT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_LENGTH)
  const key = await derive(password, salt, KEY_LENGTH, params, deriveOnThreadPool)
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${toB64(salt)}$${toB64(key)}`
}

export interface ParsedHash {
  params: ScryptParams
  salt: Buffer
  key: Buffer
}

/** Parses a stored hash; returns undefined when it is not a well-formed, bounded scrypt PHC string. */
export function parseHash (encoded: string): ParsedHash | undefined {
  const match = PHC_PATTERN.exec(encoded)
  if (match === null) return undefined
  const [, ln, r, p, salt, key] = match
  const params = { ln: Number(ln), r: Number(r), p: Number(p) }
  const inRange = params.ln >= 1 && params.r >= 1 && 2 ** params.ln * params.r <= MAX_N_TIMES_R && params.p >= 1 && params.p <= MAX_P
  return inRange ? { params, salt: Buffer.from(salt, 'base64'), key: Buffer.from(key, 'base64') } : undefined
}

/** Checks a password against a stored hash in constant time, deriving its key with `deriveKey`. */
export async function verifyPassword (password: string, encoded: string, deriveKey: DeriveKey = deriveOnThreadPool): Promise<boolean> {
  const parsed = parseHash(encoded)
  if (parsed === undefined) return false
  const key = await derive(password, parsed.salt, KEY_LENGTH, parsed.params, deriveKey)
  return timingSafeEqual(key, parsed.key)
}
