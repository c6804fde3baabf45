/**
 * Failure counting for logins. Only failures count, but a failure is known
 * only after the password check, so an attempt first takes a slot: a pair
 * admits at most as many attempts at once as it has failures left before its
 * lock (one at a time once it has been locked), and an address as many as it
 * has left under its cap. Concurrent attempts can therefore never get more
 * password checks than the limits allow, while any number of successful
 * logins, one after another or at once, count for nothing.
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

/** Who is trying: the username as sent and the client address, and an id unique to this attempt. */
export interface LoginAttempt {
  username: string
  client: string
  id: string
}

/**
 * The answer to an attempt: admitted (it holds a slot until it is settled);
 * refused for `retryAfterMs` because the pair is locked or the address is over
 * its cap; or busy, when the slots are all held by attempts still in progress.
 */
export type Admission =
  | { admitted: true }
  | { admitted: false, reason: 'locked' | 'client', retryAfterMs: number }
  | { admitted: false, reason: 'busy' }

/** How an admitted attempt ended: a wrong password (or unknown username), the right one, or not checked at all. */
export type Outcome = 'failed' | 'succeeded' | 'unchecked'

/** Where the counters live: in this process, or shared by every instance (Redis). */
export interface LoginAttemptStore {
  /** Refuses the attempt, or admits it and holds a slot for it. */
  admit: (attempt: LoginAttempt) => Promise<Admission>
  /** Frees the admitted attempt's slot; a failure counts, a success clears its pair. */
  settle: (attempt: LoginAttempt, outcome: Outcome) => Promise<void>
}

const ADMITTED: Admission = { admitted: true }
const BUSY: Admission = { admitted: false, reason: 'busy' }

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

/** How many attempts of a pair with these failures may be checked at once. */
const pairSlots = (failures: number, maxFailures: number): number => Math.max(1, maxFailures - failures)

/**
 * The counters in this process's memory (without REDIS_URL). The rules are
 * the same as the Redis scripts' in redis-login-lockout.ts; the contract test
 * runs both. Expired entries are swept at most once per window, so the maps
 * hold only the attempts of the last window or so; slots are freed by
 * `settle`, which the login always calls.
 */
export class MemoryLoginAttempts implements LoginAttemptStore {
  readonly #policy: LoginPolicy
  readonly #now: () => number
  readonly #pairs = new Map<string, PairState>()
  readonly #clients = new Map<string, ClientState>()
  readonly #pairsInProgress = new Map<string, number>()
  readonly #clientsInProgress = new Map<string, number>()
  #nextSweep: number

  constructor (policy: LoginPolicy, now: () => number = Date.now) {
    this.#policy = policy
    this.#now = now
    this.#nextSweep = now() + Math.min(policy.windowMs, policy.clientWindowMs)
  }

  /** Entries held, for tests of the sweep and of freed slots. */
  get size (): number {
    return this.#pairs.size + this.#clients.size + this.#pairsInProgress.size + this.#clientsInProgress.size
  }

  async admit ({ username, client }: LoginAttempt): Promise<Admission> {
    const now = this.#now()
    this.#sweep(now)
    const policy = this.#policy
    const clientState = this.#live(this.#clients, client, now)
    const clientFailures = clientState?.failures ?? 0
    if (clientState !== undefined && clientFailures > policy.clientMaxFailures) {
      return { admitted: false, reason: 'client', retryAfterMs: clientState.expiresAt - now }
    }
    const key = pairKey(username, client)
    const pair = this.#live(this.#pairs, key, now)
    if (pair !== undefined && pair.lockedUntil > now) {
      // An attempt while locked cannot be checked; it counts as one more failure.
      pair.lockMs = Math.min(pair.lockMs * 2, policy.lockMaxMs)
      pair.lockedUntil = now + pair.lockMs
      pair.expiresAt = pair.lockedUntil + policy.windowMs
      return { admitted: false, reason: 'locked', retryAfterMs: pair.lockMs }
    }
    const pairBusy = (this.#pairsInProgress.get(key) ?? 0) >= pairSlots(pair?.failures ?? 0, policy.maxFailures)
    const clientBusy = clientFailures + (this.#clientsInProgress.get(client) ?? 0) > policy.clientMaxFailures
    if (pairBusy || clientBusy) return BUSY
    adjust(this.#pairsInProgress, key, 1)
    adjust(this.#clientsInProgress, client, 1)
    return ADMITTED
  }

  async settle ({ username, client }: LoginAttempt, outcome: Outcome): Promise<void> {
    const key = pairKey(username, client)
    adjust(this.#pairsInProgress, key, -1)
    adjust(this.#clientsInProgress, client, -1)
    if (outcome === 'succeeded') this.#pairs.delete(key)
    if (outcome !== 'failed') return
    const now = this.#now()
    const policy = this.#policy
    const pair = this.#live(this.#pairs, key, now) ?? { failures: 0, windowEndsAt: now + policy.windowMs, lockMs: 0, lockedUntil: 0, expiresAt: 0 }
    // A pair never locked is forgotten when its window ends; one that was locked keeps its failures until a window after its lock.
    pair.failures++
    if (pair.failures >= policy.maxFailures) {
      pair.lockMs = pair.lockMs === 0 ? policy.lockMs : Math.min(pair.lockMs * 2, policy.lockMaxMs)
      pair.lockedUntil = now + pair.lockMs
    }
    pair.expiresAt = pair.lockMs === 0 ? pair.windowEndsAt : pair.lockedUntil + policy.windowMs
    this.#pairs.set(key, pair)
    const counted = this.#live(this.#clients, client, now) ?? { failures: 0, expiresAt: now + policy.clientWindowMs }
    counted.failures++
    this.#clients.set(client, counted)
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

/** Adds `delta` to a count of attempts in progress, forgetting it at zero. */
function adjust (counts: Map<string, number>, key: string, delta: number): void {
  const count = (counts.get(key) ?? 0) + delta
  if (count > 0) counts.set(key, count)
  else counts.delete(key)
}

/** One key per username and address; the separator cannot occur in an address. */
export const pairKey = (username: string, client: string): string => `${client}|${username}`
