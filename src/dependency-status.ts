import type { FastifyBaseLogger } from 'fastify'
import { isServiceError } from './errors.js'

/** How long a readiness probe waits for one dependency. */
export const PROBE_TIMEOUT_MS = 1000

/**
 * Whether a dependency the routes need (the database, Redis) can be used, as
 * the last operation on it or the last probe found. An outage is logged once
 * when it starts and once when it ends, instead of an error per request.
 */
export class DependencyStatus {
  readonly name: string
  readonly #log: FastifyBaseLogger
  readonly #probe: (timeoutMs: number) => Promise<unknown>
  /** When the current outage began (Date.now()); undefined while the dependency is available. */
  #downSince: number | undefined

  constructor (name: string, log: FastifyBaseLogger, probe: (timeoutMs: number) => Promise<unknown>) {
    this.name = name
    this.#log = log
    this.#probe = probe
  }

  /** An operation on the dependency failed for want of it (not a bad request). */
  failed (error: unknown): void {
    if (this.#downSince !== undefined) return
    this.#downSince = Date.now()
    this.#log.error({ dependency: this.name, reason: String(error) }, `${this.name} unavailable`)
  }

  /** An operation on the dependency succeeded. */
  succeeded (): void {
    if (this.#downSince === undefined) return
    const outageMs = Date.now() - this.#downSince
    this.#downSince = undefined
    this.#log.info({ dependency: this.name, outageMs }, `${this.name} available again`)
  }

  /** Probes the dependency, bounded by `timeoutMs` whatever the probe does; true when it answered. */
  async check (timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    })
    const answered = await Promise.race([this.#probe(timeoutMs), expired]).then(() => true, (error: unknown) => {
      this.failed(error)
      return false
    })
    clearTimeout(timer)
    if (answered) this.succeeded()
    return answered
  }
}

/** What `callDependency` tells of an operation's outcome: a DependencyStatus, or nothing. */
export type Availability = Pick<DependencyStatus, 'failed' | 'succeeded'> | undefined

/**
 * Runs an operation on a dependency and tells `availability` how it went. The service's own errors (a full
 * collection, a reused key) pass through; any other failure is an outage and becomes `unavailable(cause)`.
 */
export async function callDependency<T> (availability: Availability, unavailable: (cause: unknown) => Error, operation: () => Promise<T>): Promise<T> {
  let result: T
  try {
    result = await operation()
  } catch (error) {
    if (isOwnError(error)) throw error
    availability?.failed(error)
    throw unavailable(error)
  }
  availability?.succeeded()
  return result
}

function isOwnError (error: unknown): boolean {
  if (!(error instanceof Error) || !('code' in error) || !('statusCode' in error)) return false
  return typeof error.code === 'string' && typeof error.statusCode === 'number' && isServiceError(error.code, error.statusCode)
}
