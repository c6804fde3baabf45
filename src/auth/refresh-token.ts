import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * A refresh token names its session, its generation and its expiry, and proves
 * them with an HMAC under the service's key: `<session>.<generation>.<exp>.<mac>`.
 * Every generation a session ever handed out is recognised without storing any
 * token (an older one is reuse), and a forged or altered one is refused before
 * any store is asked.
 */
export interface RefreshTokenClaims {
  sessionId: string
  generation: number
  /** Expiry, in epoch seconds. */
  exp: number
}

const FORM = /^([0-9a-f-]{36})\.(0|[1-9][0-9]{0,8})\.([1-9][0-9]{0,10})\.([A-Za-z0-9_-]{43})$/

/** The key that signs refresh tokens, derived from a secret every instance shares. */
export function refreshTokenKey (secret: string): Buffer {
  return createHmac('sha256', secret).update('cats-api refresh token key').digest()
}

const macOf = (key: Buffer, body: string): Buffer => createHmac('sha256', key).update(body).digest()

export function encodeRefreshToken (key: Buffer, { sessionId, generation, exp }: RefreshTokenClaims): string {
  const body = `${sessionId}.${generation}.${exp}`
  return `${body}.${macOf(key, body).toString('base64url')}`
}

/** The token's claims when its form and MAC are right; undefined for anything else. */
export function decodeRefreshToken (key: Buffer, token: string): RefreshTokenClaims | undefined {
  const match = FORM.exec(token)
  if (match === null) return undefined
  const [, sessionId, generation, exp, mac] = match
  // Compared as text: two encodings that decode to the same bytes are not the same token.
  const expected = Buffer.from(macOf(key, `${sessionId}.${generation}.${exp}`).toString('base64url'))
  if (!timingSafeEqual(Buffer.from(mac), expected)) return undefined
  return { sessionId, generation: Number(generation), exp: Number(exp) }
}
