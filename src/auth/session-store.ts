import type { UserId } from './schemas.js'
import { MAX_ISSUED_AHEAD_SECONDS } from './token-claims.js'

/**
 * One login and every token refreshed from it. The record is what every
 * instance agrees on: rotation compares and bumps `generation`, ending a
 * session deletes the record, and a refresh of a session without a record is
 * refused, so an ended session can never come back.
 */
export interface SessionRecord {
  id: string
  userId: UserId
  username: string
  /** The generation of the current refresh token; each rotation adds one. */
  generation: number
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
}

/** How many refreshes one session may make per window. */
export interface RefreshLimit {
  max: number
  windowMs: number
}

/** The outcome of presenting generation `presented` of a session's refresh token. */
export type Rotation =
  | { outcome: 'rotated', session: SessionRecord }
  /** An older generation: someone holds a copy of a rotated token, and the session has now ended. */
  | { outcome: 'reused' }
  | { outcome: 'limited', retryAfterMs: number }
  /** Unknown, ended or expired session, or a generation it never handed out. */
  | { outcome: 'refused' }

/** Where the session records live: the database, Redis or this process's memory. */
export interface SessionStore {
  /** Records a new session, then ends the user's oldest sessions beyond `maxPerUser`; answers the ids it ended. */
  start: (session: SessionRecord, maxPerUser: number) => Promise<string[]>
  /**
   * Rotates the session when `presented` is its current generation, atomically with every other
   * rotation and ending of it: of two presenters of one token, one rotates and the other is a reuse.
   */
  rotate: (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit) => Promise<Rotation>
  /** Ends the session (nothing happens when it has already ended). */
  end: (id: string) => Promise<void>
  close: () => Promise<void>
}

/** A session record is kept this long after its last token expires, for instances whose clocks run behind. */
export const SKEW_MARGIN_MS = MAX_ISSUED_AHEAD_SECONDS * 1000

/** What presenting a generation does to a session, whatever the store: the one rule the SQL and memory stores apply (Redis's script mirrors it). */
export type Decision =
  | { action: 'rotate', next: SessionRecord }
  | { action: 'end' }
  | { action: 'limited', retryAfterMs: number }
  | { action: 'refuse' }

export function decideRotation (
  session: SessionRecord | undefined, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit
): Decision {
  if (session === undefined || session.expiresMs <= nowMs || presented > session.generation) return { action: 'refuse' }
  if (presented < session.generation) return { action: 'end' }
  const windowOver = nowMs - session.windowStartMs >= limit.windowMs
  if (!windowOver && session.windowCount >= limit.max) {
    return { action: 'limited', retryAfterMs: session.windowStartMs + limit.windowMs - nowMs }
  }
  const next: SessionRecord = {
    ...session,
    generation: session.generation + 1,
    lastUsedMs: nowMs,
    expiresMs: nextExpiresMs,
    windowStartMs: windowOver ? nowMs : session.windowStartMs,
    windowCount: windowOver ? 1 : session.windowCount + 1
  }
  return { action: 'rotate', next }
}

/** What the caller of rotate learns of a decision once it has been applied. */
export function outcomeOf (decision: Decision): Rotation {
  switch (decision.action) {
    case 'rotate': return { outcome: 'rotated', session: decision.next }
    case 'end': return { outcome: 'reused' }
    case 'limited': return { outcome: 'limited', retryAfterMs: decision.retryAfterMs }
    case 'refuse': return { outcome: 'refused' }
  }
}

/** A user's key in the per-user indexes: the id as JSON, so the number 1 and the string "1" are two users. */
export const userKey = (userId: UserId): string => JSON.stringify(userId)

/** How often expired sessions are swept from memory. */
const SWEEP_INTERVAL_MS = 60_000

/** Sessions in this process's memory (one instance, no shared store); expired ones are swept on a timer. */
export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, SessionRecord>()
  /** Each user's session ids, oldest first. */
  readonly #byUser = new Map<string, Set<string>>()
  readonly #sweeper: NodeJS.Timeout

  constructor (sweepIntervalMs = SWEEP_INTERVAL_MS) {
    this.#sweeper = setInterval(() => this.sweep(), sweepIntervalMs).unref()
  }

  /** Sessions held, expired ones included until the next sweep. */
  get size (): number {
    return this.#sessions.size
  }

  async start (session: SessionRecord, maxPerUser: number): Promise<string[]> {
    const key = userKey(session.userId)
    const ids = this.#byUser.get(key) ?? new Set<string>()
    this.#byUser.set(key, ids)
    this.#sessions.set(session.id, session)
    ids.add(session.id)
    const ended: string[] = []
    for (const id of ids) {
      if (ids.size <= maxPerUser) break
      this.#delete(id)
      ended.push(id)
    }
    return ended
  }

  async rotate (id: string, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit): Promise<Rotation> {
    const decision = decideRotation(this.#sessions.get(id), presented, nowMs, nextExpiresMs, limit)
    if (decision.action === 'rotate') this.#sessions.set(id, decision.next)
    if (decision.action === 'end') this.#delete(id)
    return outcomeOf(decision)
  }

  async end (id: string): Promise<void> {
    this.#delete(id)
  }

  /** Removes the sessions whose last token has expired (with the margin). */
  sweep (nowMs = Date.now()): void {
    for (const [id, session] of this.#sessions) {
      if (session.expiresMs + SKEW_MARGIN_MS <= nowMs) this.#delete(id)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }

  #delete (id: string): void {
    const session = this.#sessions.get(id)
    if (session === undefined) return
    this.#sessions.delete(id)
    const key = userKey(session.userId)
    const ids = this.#byUser.get(key)
    ids?.delete(id)
    if (ids?.size === 0) this.#byUser.delete(key)
  }
}
