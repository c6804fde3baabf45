import type { DependencyStatus } from '../dependency-status.js'
import { LoginLimiterUnavailable, TooManyLoginAttempts } from '../http/errors.js'
import type { LoginAttempt, LoginAttemptStore } from './login-attempts.js'

/**
 * Brute-force protection of the login: only failures count, per username and
 * client address (a lock that doubles while it is tried) and per address
 * across usernames. It answers with the service's errors: 429 with the
 * seconds to wait, or 503 when the shared counters (Redis) cannot be used.
 */
export class LoginProtection {
  readonly #store: LoginAttemptStore
  readonly #status: DependencyStatus | undefined

  /** `status` is the shared store's (Redis): it hears of every command's success or failure. */
  constructor (store: LoginAttemptStore, status?: DependencyStatus) {
    this.#store = store
    this.#status = status
  }

  /** Before the password is checked: throws 429 when the pair or the address is locked; otherwise the attempt counts as a failure. */
  async admit (attempt: LoginAttempt): Promise<void> {
    const admission = await this.#store.admit(attempt).catch((error: unknown) => {
      this.#status?.failed(error)
      throw new LoginLimiterUnavailable({ cause: error })
    })
    this.#status?.succeeded()
    if (admission.admitted) return
    const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000))
    throw Object.assign(new TooManyLoginAttempts(seconds), { retryAfter: seconds })
  }

  /**
   * The password was right: the pair starts afresh. Never throws: the user has
   * proved who they are, so an outage here only leaves one failure counted.
   */
  async succeeded (attempt: LoginAttempt): Promise<void> {
    await this.#store.succeeded(attempt).then(() => this.#status?.succeeded(), (error: unknown) => this.#status?.failed(error))
  }
}
