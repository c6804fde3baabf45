import { createHash, randomUUID } from 'node:crypto'
import { decodeRefreshToken, encodeRefreshToken, type RefreshTokenClaims } from './refresh-token.js'
import type { Denylist } from './denylist.js'
import { SKEW_MARGIN_MS, type RefreshLimit, type SessionRecord, type SessionStore } from './session-store.js'
import type { LogoutScope, SessionView, TokenClaims, UserId, VerifiedClaims } from '../schemas.js'
import type { Accounts } from '../login/users.js'
import { TooManyRefreshes } from '../../errors.js'
import { userKey } from '../user-key.js'

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
    // The sessions the cap ends are denied before they end: should a denial fail, nothing has ended, and
    // the retry denies them again; should the start fail after them, a retry or their own next refresh ends them.
    const denied: string[] = []
    let outcome = await store.start(session, maxPerUser)
    while (!outcome.started) {
      for (const id of outcome.undenied) await this.#deny(id)
      denied.push(...outcome.undenied)
      outcome = await store.start(session, maxPerUser, denied)
    }
    const { ended } = outcome
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
    const { refreshLifetimeSeconds, refreshLimit, store, users, denylist } = this.#options
    const nowMs = Date.now()
    const presented = await this.#claimsOf(refreshToken, nowMs)
    if (presented === undefined) return undefined
    const { sessionId } = presented
    const [rotation, denied] = await Promise.all([
      store.rotate(sessionId, presented.generation, nowMs, nowMs + refreshLifetimeSeconds * 1000, refreshLimit, presented.user),
      denylist.isRevoked(sessionId, sessionId)
    ])
    // Denied but not ended: an end whose denial was written and whose ending failed. Its next refresh finishes it.
    if (denied && (rotation.outcome === 'rotated' || rotation.outcome === 'repeated')) {
      await store.endSession(sessionId, userKey(rotation.session.userId))
      return undefined
    }
    // A session that ended now, or earlier (in case its first denial failed): its access tokens stay denied.
    if (rotation.outcome === 'reused' || rotation.outcome === 'ended') await this.#deny(sessionId)
    if (rotation.outcome === 'reused') this.#options.events?.ended('reuse', 1)
    if (rotation.outcome === 'limited') {
      const seconds = Math.max(1, Math.ceil(rotation.retryAfterMs / 1000))
      throw Object.assign(new TooManyRefreshes(seconds), { retryAfter: seconds })
    }
    if (rotation.outcome !== 'rotated' && rotation.outcome !== 'repeated') return undefined
    const { session } = rotation
    const user = await users.findById(session.userId)
    if (user === undefined || user.username !== session.username) {
      await this.#endSession(session.id, userKey(session.userId), 'user_gone')
      return undefined
    }
    return { accessToken: this.#accessToken(session), refreshToken: this.#refreshToken(session) }
  }

  /**
   * Logout: ends the session of this access token (`local`), the user's other sessions (`others`), or both
   * (`global`). Each session is denied before it ends: should a denial fail, the sessions not ended yet are
   * still live, and the retry denies and ends them; should an ending fail, its session is denied already, and the
   * retry (or its own next refresh) ends it.
   */
  async endSessions (claims: VerifiedClaims, scope: LogoutScope = 'local'): Promise<void> {
    if (scope !== 'local') {
      const others = (await this.#options.store.list(claims.sub, Date.now())).map((session) => session.id).filter((id) => id !== claims.sid)
      for (const id of others) await this.#deny(id)
      const ended = await this.#options.store.endSessions(claims.sub, others, Date.now())
      if (ended.length > 0) this.#options.events?.ended('logout_others', ended.length)
    }
    if (scope !== 'others') await this.#endSession(claims.sid, userKey(claims.sub), 'logout')
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

  /**
   * Ends one of the token's user's live sessions, denied before it ends; false when the user has no live
   * session of this id. A retry after a failure finds it still live, so it is denied and ended then.
   */
  async endSession (claims: VerifiedClaims, id: string): Promise<boolean> {
    const { store } = this.#options
    if (!(await store.list(claims.sub, Date.now())).some((session) => session.id === id)) return false
    await this.#deny(id)
    // Ended by this request or, meanwhile, by another: either way it has ended, and is denied.
    const ended = await store.endSessions(claims.sub, [id], Date.now())
    if (ended.length > 0) this.#options.events?.ended('owner', 1)
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

  /** Denies the session, then ends it: an ending is never written before its denial. */
  async #endSession (sessionId: string, user: string, reason: EndReason): Promise<void> {
    await this.#deny(sessionId)
    await this.#options.store.endSession(sessionId, user)
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
    return encodeRefreshToken(this.#options.refreshKey, {
      sessionId: session.id, generation: session.generation, exp: Math.floor(session.expiresMs / 1000), user: userKey(session.userId)
    })
  }
}
