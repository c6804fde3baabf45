/** A session store (the database or Redis) failed or could not be reached; the cause says how. */
export class SessionStoreUnavailableError extends Error {
  override readonly name = 'SessionStoreUnavailableError'
  constructor (cause: unknown) {
    super('The session store is unavailable', { cause })
  }
}
