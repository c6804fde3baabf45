import type { DependencyStatus } from '../dependency-status.js'

/** A session store (the database or Redis) failed or could not be reached; the cause says how. */
export class SessionStoreUnavailableError extends Error {
  override readonly name = 'SessionStoreUnavailableError'
  constructor (cause: unknown) {
    super('The session store is unavailable', { cause })
  }
}

/** Runs a session store's operation; the outcome is reported to the dependency's status, and a failure becomes SessionStoreUnavailableError. */
export async function guarded<T> (status: DependencyStatus, operation: () => Promise<T>): Promise<T> {
  try {
    const result = await operation()
    status.succeeded()
    return result
  } catch (error) {
    status.failed(error)
    throw new SessionStoreUnavailableError(error)
  }
}
