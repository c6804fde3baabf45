import { createHash, randomUUID } from 'node:crypto'
import { decodeRefreshToken, encodeRefreshToken, type RefreshTokenClaims } from './refresh-token.js'
import type { Denylist } from './denylist.js'
import { SKEW_MARGIN_MS, type RefreshLimit, type SessionRecord, type SessionStore } from './session-store.js'
import type { LogoutScope, SessionView, TokenClaims, UserId, VerifiedClaims } from './schemas.js'
import type { Accounts } from './users.js'
import { TooManyRefreshes } from '../errors.js'

/** The tokens login and refresh hand out. */
export interface IssuedTokens {
  accessToken: string
  /** Only when refresh tokens are on. */
  refreshToken?: string
}

/** Where a login came from, as the session list shows it. */
export interface LoginClient {
  address: string
  userAgent: string
}

/** The longest user agent a session keeps. */
export const USER_AGENT_MAX = 256

/** A refresh token handed out before session records existed: 256 random bits, known by its SHA-256 hash. */
const LEGACY_REFRESH_TOKEN = /^[A-Za-z0-9_-]{43}$/

/** Why a session ended, as the metrics count it. */
export type EndReason = 'logout' | 'logout_others' | 'owner' | 'reuse' | 'cap' | 'user_gone'

/** What the metrics hear of sessions (src/metrics/service-metrics.ts). */
export interface SessionEvents {
  started: () => void
  ended: (reason: EndReason, count: number) => void
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
  /** The key refresh tokens are signed with (refreshTokenKey). */
  refreshKey: Buffer
  /** How many refreshes one session may make per window. */
  refreshLimit: RefreshLimit
  /** Most live sessions per user; a login beyond it ends the user's oldest. */
  maxPerUser: number
  store: SessionStore & { legacySession?: (tokenHash: Buffer) => Promise<string | undefined> }
  denylist: Denylist
  users: Pick<Accounts, 'findById'>
  /** Told of each session started and ended, when the app has metrics. */
  events?: SessionEvents
}

/**
 * A session is one login: every access token issued through it, at login and at
 * each refresh, carries its id (`sid`) and a `jti` of its own. Ending a session
 * (logout, a reused refresh token, a user over the session cap) marks its record
 * ended, so it can never refresh again, and denies its access tokens until the
 * last one issued could expire.
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
  async start (user: { id: UserId, username: string }, client: LoginClient): Promise<IssuedTokens> {
    const { refreshEnabled, refreshLifetimeSeconds, accessLifetimeSeconds, store, maxPerUser } = this.#options
    const nowMs = Date.now()
    const session: SessionRecord = {
      id: randomUUID(),
      userId: user.id,
      username: user.username,
      generation: 0,
      rotatedMs: 0,
      createdMs: nowMs,
      lastUsedMs: nowMs,
      address: client.address,
      userAgent: client.userAgent.slice(0, USER_AGENT_MAX),
      // Without refresh tokens the session lives as long as its one access token.
      expiresMs: nowMs + (refreshEnabled ? refreshLifetimeSeconds : accessLifetimeSeconds) * 1000,
      windowStartMs: 0,
      windowCount: 0,
      ended: false
    }
    const ended = await store.start(session, maxPerUser)
    for (const id of ended) await this.#deny(id)
    this.#options.events?.started()
    if (ended.length > 0) this.#options.events?.ended('cap', ended.length)
    const accessToken = this.#accessToken(session)
    if (!refreshEnabled) return { accessToken }
    return { accessToken, refreshToken: this.#refreshToken(session) }
  }

  /**
   * Exchanges a refresh token for a new access token and a new refresh token, or
   * answers undefined: malformed, forged, expired, of an ended session, already
   * used (which also ends its session), or its user is gone or renamed. The token
   * replaced by the latest refresh, within the reuse window, gets the session's
   * current refresh token again. Throws TooManyRefreshes when the session
   * refreshes faster than its limit.
   */
  async refresh (refreshToken: string): Promise<Required<IssuedTokens> | undefined> {
    const { refreshLifetimeSeconds, refreshLimit, store, users } = this.#options
    const nowMs = Date.now()
    const presented = await this.#claimsOf(refreshToken, nowMs)
    if (presented === undefined) return undefined
    const rotation = await store.rotate(presented.sessionId, presented.generation, nowMs, nowMs + refreshLifetimeSeconds * 1000, refreshLimit)
    // A session that ended now, or earlier (in case its first denial failed): its access tokens stay denied.
    if (rotation.outcome === 'reused' || rotation.outcome === 'ended') await this.#deny(presented.sessionId)
    if (rotation.outcome === 'reused') this.#options.events?.ended('reuse', 1)
    if (rotation.outcome === 'limited') {
      const seconds = Math.max(1, Math.ceil(rotation.retryAfterMs / 1000))
      throw Object.assign(new TooManyRefreshes(seconds), { retryAfter: seconds })
    }
    if (rotation.outcome !== 'rotated' && rotation.outcome !== 'repeated') return undefined
    const { session } = rotation
    const user = await users.findById(session.userId)
    if (user === undefined || user.username !== session.username) {
      await this.#end(session.id, 'user_gone')
      return undefined
    }
    return { accessToken: this.#accessToken(session), refreshToken: this.#refreshToken(session) }
  }

  /** Logout: ends the session of this access token (`local`), the user's other sessions (`others`), or both (`global`). */
  async end (claims: VerifiedClaims, scope: LogoutScope = 'local'): Promise<void> {
    if (scope !== 'others') await this.#end(claims.sid, 'logout')
    if (scope === 'local') return
    const others = await this.#options.store.endOthers(claims.sub, claims.sid, Date.now())
    for (const id of others) await this.#deny(id)
    if (others.length > 0) this.#options.events?.ended('logout_others', others.length)
  }

  /** The live sessions of the token's user, oldest first, the token's own marked `current`. */
  async list (claims: VerifiedClaims): Promise<SessionView[]> {
    const sessions = await this.#options.store.list(claims.sub, Date.now())
    return sessions.map((session) => ({
      id: session.id,
      created: new Date(session.createdMs).toISOString(),
      lastUsed: new Date(session.lastUsedMs).toISOString(),
      address: session.address,
      userAgent: session.userAgent,
      current: session.id === claims.sid
    }))
  }

  /** Ends one of the token's user's live sessions; false when the user has no live session of this id. */
  async endOne (claims: VerifiedClaims, id: string): Promise<boolean> {
    const ended = await this.#options.store.endOf(claims.sub, id, Date.now())
    if (!ended) return false
    await this.#deny(id)
    this.#options.events?.ended('owner', 1)
    return true
  }

  /** Whether the token guard must refuse this verified token. */
  isRevoked (claims: VerifiedClaims): boolean | Promise<boolean> {
    return this.#options.denylist.isRevoked(claims.jti, claims.sid)
  }

  /** The session and generation a refresh token names, when it is genuine and unexpired. */
  async #claimsOf (refreshToken: string, nowMs: number): Promise<RefreshTokenClaims | undefined> {
    const { refreshKey, store } = this.#options
    if (LEGACY_REFRESH_TOKEN.test(refreshToken) && store.legacySession !== undefined) {
      const sessionId = await store.legacySession(createHash('sha256').update(refreshToken).digest())
      // Its expiry is the session's own, which the store checks.
      return sessionId === undefined ? undefined : { sessionId, generation: 0, exp: Infinity }
    }
    const claims = decodeRefreshToken(refreshKey, refreshToken)
    if (claims === undefined || claims.exp * 1000 <= nowMs) return undefined
    return claims
  }

  async #end (sessionId: string, reason: EndReason): Promise<void> {
    await this.#options.store.end(sessionId)
    await this.#deny(sessionId)
    this.#options.events?.ended(reason, 1)
  }

  /**
   * Denies the access tokens of an ended session until the last one issued could expire: its record is gone, so
   * no later token exists, and an instance whose clock runs ahead may have issued one up to the margin later.
   */
  async #deny (sessionId: string): Promise<void> {
    await this.#options.denylist.revoke(sessionId, Date.now() + this.#options.accessLifetimeSeconds * 1000 + SKEW_MARGIN_MS)
  }

  #accessToken (session: SessionRecord): string {
    return this.#options.sign({ sub: session.userId, username: session.username, jti: randomUUID(), sid: session.id })
  }

  #refreshToken (session: SessionRecord): string {
    return encodeRefreshToken(this.#options.refreshKey, { sessionId: session.id, generation: session.generation, exp: Math.floor(session.expiresMs / 1000) })
  }
}
