/**
 * Failure counting for logins. An attempt is admitted (and counted as a
 * failure) before its password is checked, so concurrent attempts can never
 * get more password checks than the limits allow; a successful login then
 * takes its count back and clears its username and address pair.
 */

/** The limits, in milliseconds and counts. */
export interface LoginPolicy {
  /** Failures of one username from one address, within `windowMs`, that lock the pair. */
  maxFailures: number
  windowMs: number
  /** The first lock; each further failure while locked doubles it, up to `lockMaxMs`. */
  lockMs: number
  lockMaxMs: number
  /** Failures of one address across usernames, within `clientWindowMs`, past which the address is refused. */
  clientMaxFailures: number
  clientWindowMs: number
}

/** Who is trying: the username as sent and the client address. */
export interface LoginAttempt {
  username: string
  client: string
}

/** The answer to an attempt: admitted, or refused for `retryAfterMs` because the pair is locked or the address is over its cap. */
export type Admission = { admitted: true } | { admitted: false, reason: 'locked' | 'client', retryAfterMs: number }

/** Where the counters live: in this process, or shared by every instance (Redis). */
export interface LoginAttemptStore {
  /** Refuses the attempt, or admits it and counts it as a failure until `succeeded` says otherwise. */
  admit: (attempt: LoginAttempt) => Promise<Admission>
  /** The admitted attempt succeeded: its pair starts afresh and its address gets the failure back. */
  succeeded: (attempt: LoginAttempt) => Promise<void>
}

const ADMITTED: Admission = { admitted: true }

interface PairState {
  failures: number
  windowEndsAt: number
  /** The current lock length; 0 while the pair was never locked. */
  lockMs: number
  lockedUntil: number
  /** When the state is forgotten: the window's end, or a window after the last lock ends. */
  expiresAt: number
}

interface ClientState {
  failures: number
  expiresAt: number
}

/**
 * The counters in this process's memory (without REDIS_URL). The rules are
 * the same as the Redis script's in redis-login-attempts.ts; the contract test
 * runs both. Expired entries are swept at most once per window, so the maps
 * hold only the attempts of the last window or so.
 */
export class MemoryLoginAttempts implements LoginAttemptStore {
  readonly #policy: LoginPolicy
  readonly #now: () => number
  readonly #pairs = new Map<string, PairState>()
  readonly #clients = new Map<string, ClientState>()
  #nextSweep: number

  constructor (policy: LoginPolicy, now: () => number = Date.now) {
    this.#policy = policy
    this.#now = now
    this.#nextSweep = now() + Math.min(policy.windowMs, policy.clientWindowMs)
  }

  /** Entries held, for tests of the sweep. */
  get size (): number {
    return this.#pairs.size + this.#clients.size
  }

  async admit ({ username, client }: LoginAttempt): Promise<Admission> {
    const now = this.#now()
    this.#sweep(now)
    const policy = this.#policy
    const clientState = this.#live(this.#clients, client, now)
    if (clientState !== undefined && clientState.failures > policy.clientMaxFailures) {
      return { admitted: false, reason: 'client', retryAfterMs: clientState.expiresAt - now }
    }
    const key = pairKey(username, client)
    const pair = this.#live(this.#pairs, key, now) ?? { failures: 0, windowEndsAt: now + policy.windowMs, lockMs: 0, lockedUntil: 0, expiresAt: 0 }
    if (pair.lockedUntil > now) {
      pair.lockMs = Math.min(pair.lockMs * 2, policy.lockMaxMs)
      pair.lockedUntil = now + pair.lockMs
      pair.expiresAt = pair.lockedUntil + policy.windowMs
      return { admitted: false, reason: 'locked', retryAfterMs: pair.lockMs }
    }
    // A pair never locked is forgotten when its window ends; one that was locked keeps its failures until a window after its lock.
    pair.failures++
    if (pair.failures >= policy.maxFailures) {
      pair.lockMs = pair.lockMs === 0 ? policy.lockMs : Math.min(pair.lockMs * 2, policy.lockMaxMs)
      pair.lockedUntil = now + pair.lockMs
    }
    pair.expiresAt = pair.lockMs === 0 ? pair.windowEndsAt : pair.lockedUntil + policy.windowMs
    this.#pairs.set(key, pair)
    const counted = clientState ?? { failures: 0, expiresAt: now + policy.clientWindowMs }
    counted.failures++
    this.#clients.set(client, counted)
    return ADMITTED
  }

  async succeeded ({ username, client }: LoginAttempt): Promise<void> {
    this.#pairs.delete(pairKey(username, client))
    const clientState = this.#live(this.#clients, client, this.#now())
    if (clientState !== undefined && clientState.failures > 0) clientState.failures--
  }

  #live<State extends { expiresAt: number }> (map: Map<string, State>, key: string, now: number): State | undefined {
    const state = map.get(key)
    if (state === undefined || state.expiresAt > now) return state
    map.delete(key)
    return undefined
  }

  #sweep (now: number): void {
    if (now < this.#nextSweep) return
    this.#nextSweep = now + Math.min(this.#policy.windowMs, this.#policy.clientWindowMs)
    for (const map of [this.#pairs, this.#clients]) {
      for (const [key, state] of map) if (state.expiresAt <= now) map.delete(key)
    }
  }
}

/** One key per username and address; the separator cannot occur in an address. */
export const pairKey = (username: string, client: string): string => `${client}|${username}`
