import type { UserId } from '../schemas.js'
import { callDependency, type DependencyStatus } from '../../dependency-status.js'
import { SessionStoreUnavailable } from '../../errors.js'
import { MAX_ISSUED_AHEAD_SECONDS } from '../tokens/token-claims.js'

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
  endSession: (id: string, user?: string) => Promise<void>
  /** The user's live sessions (not ended, not expired), oldest first. */
  list: (userId: UserId, nowMs: number) => Promise<SessionRecord[]>
  /** Ends those of `ids` that are live sessions of this user; answers the ids it ended. */
  endSessions: (userId: UserId, ids: readonly string[], nowMs: number) => Promise<string[]>
  close: () => Promise<void>
}

/** A session record is kept this long after its last token expires, for instances whose clocks run behind. */
export const SKEW_MARGIN_MS = MAX_ISSUED_AHEAD_SECONDS * 1000

/** How long an ended session is kept when the store is not told: the default access-token lifetime (60m) plus the margin. */
export const DEFAULT_ENDED_KEEP_MS = 60 * 60_000 + SKEW_MARGIN_MS

/** Runs an operation of a shared session store (see `callDependency`): a failure becomes SessionStoreUnavailable. */
export async function sessionStoreCall<T> (status: DependencyStatus, operation: () => Promise<T>): Promise<T> {
  return await callDependency(status, (cause) => new SessionStoreUnavailable({ cause }), operation)
}
