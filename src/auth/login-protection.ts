import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { DependencyStatus } from '../dependency-status.js'
import { LoginLimiterUnavailable, TooManyLoginAttempts, TooManyLoginsInProgress } from '../http/errors.js'
import type { LoginAttempt, LoginAttemptStore, Outcome } from './login-attempts.js'

export interface LoginProtectionOptions {
  /** The shared store's health (Redis): it hears of every command's success or failure. */
  status?: DependencyStatus
  /** How long an attempt waits for a slot held by attempts in progress before it is answered 503. */
  slotWaitMs?: number
}

// An attempt whose slots are all held by others in progress asks again this often.
const SLOT_POLL_MS = 20

/**
 * Brute-force protection of the login: only failures count, per username and
 * client address (a lock that doubles while it is tried) and per address
 * across usernames. It answers with the service's errors: 429 with the
 * seconds to wait, 503 when the shared counters (Redis) cannot be used or
 * when more logins of one pair are in progress than it may check at once.
 */
export class LoginProtection {
  readonly #store: LoginAttemptStore
  readonly #status: DependencyStatus | undefined
  readonly #slotWaitMs: number

  constructor (store: LoginAttemptStore, { status, slotWaitMs = 2_000 }: LoginProtectionOptions = {}) {
    this.#store = store
    this.#status = status
    this.#slotWaitMs = slotWaitMs
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
    const deadline = Date.now() + this.#slotWaitMs
    for (;;) {
      const admission = await this.#store.admit(attempt).catch((error: unknown) => {
        this.#status?.failed(error)
        throw new LoginLimiterUnavailable({ cause: error })
      })
      this.#status?.succeeded()
      if (admission.admitted) return
      if (admission.reason !== 'busy') {
        const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000))
        throw Object.assign(new TooManyLoginAttempts(seconds), { retryAfter: seconds })
      }
      if (Date.now() >= deadline) throw new TooManyLoginsInProgress()
      await sleep(SLOT_POLL_MS)
    }
  }

  async #settle (attempt: LoginAttempt, outcome: Outcome): Promise<void> {
    await this.#store.settle(attempt, outcome).then(() => this.#status?.succeeded(), (error: unknown) => {
      this.#status?.failed(error)
      throw error
    })
  }
}
