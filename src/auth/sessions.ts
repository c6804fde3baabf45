import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { RefreshTokenStore } from './refresh-token-store.js'
import type { RevocationStore } from './revocation-store.js'
import type { TokenClaims, UserId, VerifiedClaims } from './schemas.js'
import type { UserStore } from './users.js'

/** 256 random bits, base64url: 43 characters. */
const REFRESH_TOKEN_BYTES = 32
const REFRESH_TOKEN_FORM = /^[A-Za-z0-9_-]{43}$/

/** The tokens login and refresh hand out. */
export interface IssuedTokens {
  accessToken: string
  /** Only when refresh tokens are on. */
  refreshToken?: string
}

export interface SessionsOptions {
  /** Signs an access token with the service's key and lifetime. */
  sign: (claims: TokenClaims) => string
  /** The access tokens' lifetime, in seconds. */
  accessLifetimeSeconds: number
  /** Whether login hands out refresh tokens. */
  refreshEnabled: boolean
  /** The refresh tokens' lifetime, in seconds. */
  refreshLifetimeSeconds: number
  revocations: RevocationStore
  refreshTokens: RefreshTokenStore
  users: Pick<UserStore, 'findById'>
}

const hashOf = (token: string): Buffer => createHash('sha256').update(token).digest()

/**
 * A session is one login: every access token issued through it, at login and at
 * each refresh, carries its id (`sid`) and a `jti` of its own. Logout denies the
 * token, and the whole session when it has refresh tokens; a refresh token
 * presented a second time ends the session, because one of its two holders is
 * not its owner.
 */
export class Sessions {
  readonly #options: SessionsOptions

  constructor (options: SessionsOptions) {
    this.#options = options
  }

  get refreshEnabled (): boolean {
    return this.#options.refreshEnabled
  }

  /** The tokens of a new session for a user whose credentials were verified. */
  async start (user: { id: UserId, username: string }): Promise<IssuedTokens> {
    const sessionId = randomUUID()
    const accessToken = this.#accessToken(user.id, user.username, sessionId)
    const { refreshEnabled, refreshLifetimeSeconds, refreshTokens } = this.#options
    if (!refreshEnabled) return { accessToken }
    const refreshToken = randomBytes(REFRESH_TOKEN_BYTES).toString('base64url')
    await refreshTokens.add(hashOf(refreshToken), {
      sessionId, userId: user.id, username: user.username, expiresAtMs: Date.now() + refreshLifetimeSeconds * 1000
    })
    return { accessToken, refreshToken }
  }

  /**
   * Exchanges a refresh token for a new access token and a new refresh token, or
   * answers undefined: unknown, malformed, expired, already used (which also ends
   * its session), or its user is gone or renamed.
   */
  async refresh (refreshToken: string): Promise<Required<IssuedTokens> | undefined> {
    const { refreshLifetimeSeconds, refreshTokens, users } = this.#options
    if (!REFRESH_TOKEN_FORM.test(refreshToken)) return undefined
    const next = randomBytes(REFRESH_TOKEN_BYTES).toString('base64url')
    const rotation = await refreshTokens.rotate(hashOf(refreshToken), hashOf(next), Date.now() + refreshLifetimeSeconds * 1000)
    if (rotation.outcome === 'reused') await this.#endSession(rotation.sessionId)
    if (rotation.outcome !== 'rotated') return undefined
    const { sessionId, userId, username } = rotation.record
    const user = users.findById(userId)
    if (user === undefined || user.username !== username) {
      await this.#endSession(sessionId)
      return undefined
    }
    return { accessToken: this.#accessToken(userId, username, sessionId), refreshToken: next }
  }

  /** Logout: denies this access token until it expires and, with refresh tokens on, ends its session. */
  async end (claims: VerifiedClaims): Promise<void> {
    await this.#options.revocations.revoke(claims.jti, claims.exp * 1000)
    if (this.refreshEnabled) await this.#endSession(claims.sid)
  }

  /** Whether the guard must refuse this verified token. Synchronous (no I/O) with the memory store. */
  isRevoked (claims: VerifiedClaims): boolean | Promise<boolean> {
    return this.#options.revocations.isRevoked(claims.jti, claims.sid)
  }

  /** Removes the session's refresh tokens and denies its access tokens until the last one issued would expire. */
  async #endSession (sessionId: string): Promise<void> {
    const { refreshTokens, revocations, accessLifetimeSeconds } = this.#options
    await refreshTokens.revokeSession(sessionId)
    await revocations.revoke(sessionId, Date.now() + accessLifetimeSeconds * 1000)
  }

  #accessToken (sub: UserId, username: string, sid: string): string {
    return this.#options.sign({ sub, username, jti: randomUUID(), sid })
  }
}
