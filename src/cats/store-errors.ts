/**
 * What can go wrong inside a cats store, whatever keeps the cats. Stores throw
 * these and know nothing of HTTP; the error handler turns them into responses.
 */

/** A create when the store already holds the most cats it may. */
export class CollectionFullError extends Error {
  override readonly name = 'CollectionFullError'
  constructor (readonly maxCats: number) {
    super(`The collection is full (${maxCats} cats)`)
  }
}

/** A merge whose result would be larger than a stored cat may be. */
export class CatTooLargeError extends Error {
  override readonly name = 'CatTooLargeError'
  constructor (readonly maxCatBytes: number) {
    super(`The merged cat would be larger than ${maxCatBytes} bytes`)
  }
}

/** The database behind the store failed or could not be reached; the cause says how. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
  constructor (cause: unknown) {
    super('The cats store is unavailable', { cause })
  }
}

/** A create with an idempotency key whose first request is still being processed. */
export class IdempotencyKeyInUseError extends Error {
  override readonly name = 'IdempotencyKeyInUseError'
  constructor () {
    super('A request with this idempotency key is still in progress')
  }
}

/** A create with an idempotency key already used for a different request body. */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = 'IdempotencyKeyReusedError'
  constructor () {
    super('This idempotency key was used for a different request')
  }
}
