import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * A refresh token names its session, its generation and its expiry, and proves
 * them with an HMAC under the service's key: `<session>.<generation>.<exp>.<mac>`.
 * Every generation a session ever handed out is recognised without storing any
 * token (an older one is reuse), and a forged or altered one is refused before
 * any store is asked. Tokens issued since Redis Cluster support also carry the user's key (src/auth/user-key.ts),
 * base64url, under the MAC: `<session>.<generation>.<exp>.<user>.<mac>`, so that a refresh finds the slot of the
 * user's session keys; tokens of the form without it keep working until they expire.
 */
export interface RefreshTokenClaims {
  sessionId: string
  generation: number
  /** Expiry, in epoch seconds. */
  exp: number
  /** The user's key (userKey), in the tokens that carry it. */
  user?: string
}

const FORM = /^([0-9a-f-]{36})\.(0|[1-9][0-9]{0,8})\.([1-9][0-9]{0,10})\.([A-Za-z0-9_-]{43})$/
const FORM_WITH_USER = /^([0-9a-f-]{36})\.(0|[1-9][0-9]{0,8})\.([1-9][0-9]{0,10})\.([A-Za-z0-9_-]{1,1400})\.([A-Za-z0-9_-]{43})$/

/** The key that signs refresh tokens, derived from a secret every instance shares. */
export function refreshTokenKey (secret: string): Buffer {
  return createHmac('sha256', secret).update('cats-api refresh token key').digest()
}

const macOf = (key: Buffer, body: string): Buffer => createHmac('sha256', key).update(body).digest()

export function encodeRefreshToken (key: Buffer, { sessionId, generation, exp, user }: RefreshTokenClaims): string {
  const body = user === undefined ? `${sessionId}.${generation}.${exp}` : `${sessionId}.${generation}.${exp}.${Buffer.from(user).toString('base64url')}`
  return `${body}.${macOf(key, body).toString('base64url')}`
}

/** The token's claims when its form and MAC are right; undefined for anything else. */
export function decodeRefreshToken (key: Buffer, token: string): RefreshTokenClaims | undefined {
  const withUser = FORM_WITH_USER.exec(token)
  if (withUser !== null) {
    const [, sessionId, generation, exp, user, mac] = withUser
    if (!macMatches(key, `${sessionId}.${generation}.${exp}.${user}`, mac)) return undefined
    return { sessionId, generation: Number(generation), exp: Number(exp), user: Buffer.from(user, 'base64url').toString() }
  }
  const match = FORM.exec(token)
  if (match === null) return undefined
  const [, sessionId, generation, exp, mac] = match
  if (!macMatches(key, `${sessionId}.${generation}.${exp}`, mac)) return undefined
  return { sessionId, generation: Number(generation), exp: Number(exp) }
}

// Compared as text: two encodings that decode to the same bytes are not the same token.
const macMatches = (key: Buffer, body: string, mac: string): boolean =>
  timingSafeEqual(Buffer.from(mac), Buffer.from(macOf(key, body).toString('base64url')))
