import { randomUUID } from 'node:crypto'
import type { DependencyStatus } from '../../dependency-status.js'
import { LoginLimiterUnavailable, TooManyLoginAttempts, TooManyLoginsInProgress } from '../../errors.js'
import { MemoryLoginAttempts, pairKey, type Admission, type LoginAttempt, type LoginAttemptStore, type LoginPolicy, type Outcome } from './login-lockout.js'
import { RedisLoginAttempts } from './redis-login-lockout.js'
import type { Config } from '../../config.js'
import type { RedisConnection } from '../../redis-connection.js'
import { SlotWaiters } from './slot-waiters.js'

export interface LoginProtectionOptions {
  /** The shared store's health (Redis): it hears of every command's success or failure. */
  status?: DependencyStatus
  /** How long an attempt waits for a slot held by attempts in progress before it is answered 503. */
  slotWaitMs?: number
  /** Attempts in line for a slot at once in this process; past it, one that would wait behind another is answered 503 at once. */
  maxWaiting?: number
}

// Slots freed in this process wake their waiters at once; asking again this often only finds the slots freed by
// other instances or by expired leases, so a login may wait this much longer for those.
const SLOT_POLL_MS = 100

/**
 * Brute-force protection of the login: only failures count, per username and
 * client address (a lock that doubles while it is tried) and per address
 * across usernames. It answers with the service's errors: 429 with the
 * seconds to wait, 503 when the shared counters (Redis) cannot be used, or
 * when a login found every slot of its pair held and waited too long for one
 * (or too many logins wait already).
 */
export class LoginProtection {
  readonly #store: LoginAttemptStore
  readonly #status: DependencyStatus | undefined
  readonly #waiters: SlotWaiters

  constructor (store: LoginAttemptStore, { status, slotWaitMs = 2_000, maxWaiting = 100 }: LoginProtectionOptions = {}) {
    this.#store = store
    this.#status = status
    this.#waiters = new SlotWaiters(async (attempt) => await this.#ask(attempt), {
      maxWaiting, waitMs: slotWaitMs, pollMs: SLOT_POLL_MS, refused: () => new TooManyLoginsInProgress()
    })
  }

  /**
   * Runs `verify` (the password check: the user, or undefined when the
   * credentials are wrong) if the attempt is allowed, and counts its outcome.
   */
  async check<User> (username: string, client: string, verify: () => Promise<User | undefined>): Promise<User | undefined> {
    const attempt: LoginAttempt = { username, client, id: randomUUID() }
    await this.#admit(attempt)
    let user: User | undefined
    try {
      user = await verify()
    } catch (error) {
      // Not checked (the queue refused it, or the client went away): not a failure.
      await this.#settle(attempt, 'unchecked').catch(() => {})
      throw error
    }
    if (user === undefined) {
      // A failure that cannot be counted is not let through uncounted: the login fails closed.
      await this.#settle(attempt, 'failed').catch((error: unknown) => { throw new LoginLimiterUnavailable({ cause: error }) })
    } else {
      // The user has proved who they are, so an outage here only leaves the pair's old failures counted.
      await this.#settle(attempt, 'succeeded').catch(() => {})
    }
    return user
  }

  async #admit (attempt: LoginAttempt): Promise<void> {
    const admission = await this.#waiters.admit(pairKey(attempt.username, attempt.client), attempt)
    if (admission.admitted) return
    const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000))
    throw Object.assign(new TooManyLoginAttempts(seconds), { retryAfter: seconds })
  }

  async #ask (attempt: LoginAttempt): Promise<Admission> {
    const admission = await this.#store.admit(attempt).catch((error: unknown) => {
      this.#status?.failed(error)
      throw new LoginLimiterUnavailable({ cause: error })
    })
    this.#status?.succeeded()
    return admission
  }

  async #settle (attempt: LoginAttempt, outcome: Outcome): Promise<void> {
    await this.#store.settle(attempt, outcome).then(() => this.#status?.succeeded(), (error: unknown) => {
      this.#status?.failed(error)
      throw error
    }).finally(() => this.#waiters.freed(pairKey(attempt.username, attempt.client)))
  }
}

/** The login protection of the settings: its counters in Redis when there is one (shared by every instance), else in this process. */
export function loginProtectionFor (config: Config, redis: RedisConnection | undefined): LoginProtection {
  const { durations } = config
  const policy: LoginPolicy = {
    maxFailures: config.LOGIN_MAX_FAILURES,
    windowMs: durations.loginFailureWindowMs,
    lockMs: durations.loginLockMs,
    lockMaxMs: durations.loginLockMaxMs,
    clientMaxFailures: config.LOGIN_CLIENT_MAX_FAILURES,
    clientWindowMs: durations.loginClientFailureWindowMs
  }
  const maxWaiting = config.LOGIN_SLOT_QUEUE_MAX
  return redis === undefined
    ? new LoginProtection(new MemoryLoginAttempts(policy), { maxWaiting })
    : new LoginProtection(new RedisLoginAttempts(redis.client, config.REDIS_KEY_PREFIX, policy, undefined, redis.cluster), { status: redis.status, maxWaiting })
}
