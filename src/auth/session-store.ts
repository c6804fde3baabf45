import type { UserId } from './schemas.js'
import { reported, type DependencyStatus } from '../dependency-status.js'
import { SessionStoreUnavailable } from '../errors.js'
import { MAX_ISSUED_AHEAD_SECONDS } from './token-claims.js'
import { userKey } from './user-key.js'

/**
 * One login and every token refreshed from it. The record is what every
 * instance agrees on: rotation compares and bumps `generation`; ending a
 * session marks it ended and keeps it only as long as its access tokens could
 * live, so that a later refresh with its token denies them again (should the
 * first denial have failed); a refresh of a session without a record is
 * refused, so an ended session can never come back.
 */
export interface SessionRecord {
  id: string
  userId: UserId
  username: string
  /** The generation of the current refresh token; each rotation adds one. */
  generation: number
  /** When the latest rotation happened (0 before the first): the previous generation is a repeat until the reuse window has passed. */
  rotatedMs: number
  createdMs: number
  /** The login or the latest refresh. */
  lastUsedMs: number
  /** The client address and user agent at login. */
  address: string
  userAgent: string
  /** When the current refresh token (or, without refresh tokens, the access token) expires; the record is kept until then plus the clock-skew margin. */
  expiresMs: number
  /** The rate limit of refreshes: the start of the current window and the refreshes in it. */
  windowStartMs: number
  windowCount: number
  /** Ended (logout, reuse, the cap, its owner): kept until its access tokens have expired, then swept. */
  ended: boolean
}

/** How many refreshes one session may make per window, and how long the previous generation is a repeat after a rotation. */
export interface RefreshLimit {
  max: number
  windowMs: number
  /** REFRESH_REUSE_WINDOW in milliseconds; 0 makes every older generation a reuse. */
  reuseWindowMs: number
}

/** The outcome of presenting generation `presented` of a session's refresh token. */
export type Rotation =
  | { outcome: 'rotated', session: SessionRecord }
  /** The generation just replaced, within the reuse window: the session's current tokens again, no new generation. */
  | { outcome: 'repeated', session: SessionRecord }
  /** An older generation: someone holds a copy of a rotated token, and the session has now ended. */
  | { outcome: 'reused' }
  /** The session had ended already: its access tokens must stay denied. */
  | { outcome: 'ended' }
  | { outcome: 'limited', retryAfterMs: number }
  /** Unknown, ended or expired session, or a generation it never handed out. */
  | { outcome: 'refused' }

/**
 * What recording a new session did: started it, ending the sessions over the cap; or nothing at all, because some of
 * the sessions the cap would end were not denied first (`undenied`: deny them, then start again).
 */
export type StartOutcome = { started: true, ended: string[] } | { started: false, undenied: string[] }

/**
 * Where the session records live: the database, Redis or this process's memory. Each store keeps an ended
 * session for `endedKeepMs` (given at construction: the access-token lifetime plus the skew margin).
 */
export interface SessionStore {
  /**
   * Records a new session and ends the user's oldest live sessions beyond `maxPerUser` (never the new one), when each
   * of those is among `denied` (their access tokens denied already); otherwise records nothing and answers the ones
   * that are not. An ending is never written before its denial, so a denial that fails is tried again.
   */
  start: (session: SessionRecord, maxPerUser: number, denied?: readonly string[]) => Promise<StartOutcome>
  /**
   * Rotates the session when `presented` is its current generation, atomically with every other
   * rotation and ending of it: of two presenters of one token, one rotates and the other is a reuse.
   */
  rotate: (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit, user?: string) => Promise<Rotation>
  /**
   * Ends the session (nothing happens when it has already ended). `user`, in both: the key (userKey) of the user the
   * caller knows the session to be of, which a Redis Cluster needs to find it (its keys are under the user's tag).
   */
  end: (id: string, user?: string) => Promise<void>
  /** The user's live sessions (not ended, not expired), oldest first. */
  list: (userId: UserId, nowMs: number) => Promise<SessionRecord[]>
  /** Ends those of `ids` that are live sessions of this user; answers the ids it ended. */
  endEach: (userId: UserId, ids: readonly string[], nowMs: number) => Promise<string[]>
  close: () => Promise<void>
}

/** A session record is kept this long after its last token expires, for instances whose clocks run behind. */
export const SKEW_MARGIN_MS = MAX_ISSUED_AHEAD_SECONDS * 1000

/** How long an ended session is kept when the store is not told: the default access-token lifetime (60m) plus the margin. */
export const DEFAULT_ENDED_KEEP_MS = 60 * 60_000 + SKEW_MARGIN_MS

/** What presenting a generation does to a session, whatever the store: the one rule the SQL and memory stores apply (Redis's script mirrors it). */
export type Decision =
  | { action: 'rotate', next: SessionRecord }
  | { action: 'repeat', next: SessionRecord }
  | { action: 'end' }
  | { action: 'ended' }
  | { action: 'limited', retryAfterMs: number }
  | { action: 'refuse' }

export function decideRotation (
  session: SessionRecord | undefined, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit
): Decision {
  if (session === undefined || session.expiresMs <= nowMs) return { action: 'refuse' }
  if (session.ended) return { action: 'ended' }
  if (presented > session.generation) return { action: 'refuse' }
  // Two tabs refreshing at once: the later one gets what the first got. Anything older, or later, is reuse.
  const repeat = presented === session.generation - 1 && nowMs - session.rotatedMs < limit.reuseWindowMs
  if (presented < session.generation && !repeat) return { action: 'end' }
  const windowOver = nowMs - session.windowStartMs >= limit.windowMs
  if (!windowOver && session.windowCount >= limit.max) {
    return { action: 'limited', retryAfterMs: session.windowStartMs + limit.windowMs - nowMs }
  }
  const counted = {
    ...session,
    lastUsedMs: nowMs,
    windowStartMs: windowOver ? nowMs : session.windowStartMs,
    windowCount: windowOver ? 1 : session.windowCount + 1
  }
  if (repeat) return { action: 'repeat', next: counted }
  return { action: 'rotate', next: { ...counted, generation: session.generation + 1, rotatedMs: nowMs, expiresMs: nextExpiresMs } }
}

/** An ended session's record: kept no longer than `endedKeepMs` from now. */
export function endedRecord (session: SessionRecord, nowMs: number, endedKeepMs: number): SessionRecord {
  return { ...session, ended: true, expiresMs: Math.min(session.expiresMs, nowMs + endedKeepMs) }
}

/** What the caller of rotate learns of a decision once it has been applied. */
export function outcomeOf (decision: Decision): Rotation {
  switch (decision.action) {
    case 'rotate': return { outcome: 'rotated', session: decision.next }
    case 'repeat': return { outcome: 'repeated', session: decision.next }
    case 'end': return { outcome: 'reused' }
    case 'ended': return { outcome: 'ended' }
    case 'limited': return { outcome: 'limited', retryAfterMs: decision.retryAfterMs }
    case 'refuse': return { outcome: 'refused' }
  }
}

/** How often expired sessions are swept from memory. */
const SWEEP_INTERVAL_MS = 60_000

/** Sessions in this process's memory (one instance, no shared store); expired ones are swept on a timer. */
export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, SessionRecord>()
  /** Each user's session ids, oldest first. */
  readonly #byUser = new Map<string, Set<string>>()
  readonly #sweeper: NodeJS.Timeout

  readonly #endedKeepMs: number

  constructor (sweepIntervalMs = SWEEP_INTERVAL_MS, endedKeepMs = DEFAULT_ENDED_KEEP_MS) {
    this.#sweeper = setInterval(() => this.sweep(), sweepIntervalMs).unref()
    this.#endedKeepMs = endedKeepMs
  }

  /** Sessions held, expired ones included until the next sweep. */
  get size (): number {
    return this.#sessions.size
  }

  async start (session: SessionRecord, maxPerUser: number, denied: readonly string[] = []): Promise<StartOutcome> {
    const key = userKey(session.userId)
    const ids = this.#byUser.get(key) ?? new Set<string>()
    // Oldest first: those beyond the newest maxPerUser - 1 make way for the new one (the cap is at least 1).
    const over = [...ids].slice(0, Math.max(0, ids.size + 1 - maxPerUser))
    const undenied = over.filter((id) => !denied.includes(id))
    if (undenied.length > 0) return { started: false, undenied }
    this.#byUser.set(key, ids)
    this.#sessions.set(session.id, session)
    ids.add(session.id)
    for (const id of over) this.#end(id, session.createdMs)
    return { started: true, ended: over }
  }

  async rotate (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit): Promise<Rotation> {
    const decision = decideRotation(this.#sessions.get(id), presented, nowMs, nextExpiresMs, limit)
    if (decision.action === 'rotate' || decision.action === 'repeat') this.#sessions.set(id, decision.next)
    if (decision.action === 'end') this.#end(id, nowMs)
    return outcomeOf(decision)
  }

  async end (id: string): Promise<void> {
    this.#end(id, Date.now())
  }

  async list (userId: UserId, nowMs: number): Promise<SessionRecord[]> {
    // The user's listed ids are live ones, each held in #sessions until swept (which unlists it too).
    const listed = [...this.#byUser.get(userKey(userId)) ?? []].map((id) => this.#sessions.get(id) as SessionRecord)
    return listed.filter((session) => session.expiresMs > nowMs)
  }

  async endEach (userId: UserId, ids: readonly string[], nowMs: number): Promise<string[]> {
    const ended = (await this.list(userId, nowMs)).map((session) => session.id).filter((id) => ids.includes(id))
    for (const id of ended) this.#end(id, nowMs)
    return ended
  }

  /** Removes the sessions whose last token has expired (with the margin). */
  sweep (nowMs = Date.now()): void {
    for (const [id, session] of this.#sessions) {
      if (session.expiresMs + SKEW_MARGIN_MS > nowMs) continue
      this.#sessions.delete(id)
      this.#unlist(session)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  /** Marks the session ended and takes it off its user's live sessions. */
  #end (id: string, nowMs: number): void {
    const session = this.#sessions.get(id)
    if (session === undefined || session.ended) return
    this.#sessions.set(id, endedRecord(session, nowMs, this.#endedKeepMs))
    this.#unlist(session)
  }

  #unlist (session: SessionRecord): void {
    const key = userKey(session.userId)
    const ids = this.#byUser.get(key)
    ids?.delete(session.id)
    if (ids?.size === 0) this.#byUser.delete(key)
  }
}

/** Runs an operation of a shared session store (see `reported`): a failure becomes SessionStoreUnavailable. */
export async function sessionStoreCall<T> (status: DependencyStatus, operation: () => Promise<T>): Promise<T> {
  return await reported(status, (cause) => new SessionStoreUnavailable({ cause }), operation)
}
