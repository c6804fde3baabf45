import type { CreateCatBody, StoredCat, UpdateCatBody } from './schemas.js'
import { httpError, type HttpError } from '../http/error-handler.js'

export type MaybePromise<T> = T | Promise<T>

/** Limits every store enforces the same way. */
export interface StoreLimits {
  /** Most cats stored; a create past it fails with 507. */
  maxCats: number
  /** Largest stored cat, as JSON bytes; a merge past it fails with 413. */
  maxCatBytes: number
}

export const NO_LIMITS: StoreLimits = { maxCats: Number.POSITIVE_INFINITY, maxCatBytes: Number.POSITIVE_INFINITY }

/**
 * The contract the routes use, whatever keeps the cats (memory, PostgreSQL, PGlite).
 * Semantics (DECISIONS D9, D11–D13): a new cat's id is the number of stored cats
 * plus one; find, update and remove act on the earliest created cat with an id;
 * list is in creation order; update shallow-merges every field but `id`.
 */
export interface CatsStore {
  count: () => MaybePromise<number>
  list: () => MaybePromise<StoredCat[]>
  /** The same list as JSON text, as stored: the read routes send it without serializing. */
  listJson: () => MaybePromise<string>
  find: (id: number) => MaybePromise<StoredCat | undefined>
  /** The same cat as JSON text, as stored. */
  findJson: (id: number) => MaybePromise<string | undefined>
  /** Throws a 507 error when the store holds `maxCats` already. */
  create: (fields: CreateCatBody) => MaybePromise<StoredCat>
  /** Undefined when no cat has this id; throws a 413 error when the merged cat would exceed `maxCatBytes`. */
  update: (id: number, fields: UpdateCatBody) => MaybePromise<StoredCat | undefined>
  remove: (id: number) => MaybePromise<void>
  /** Whether the store can serve requests now (for readiness checks). */
  isReady: () => MaybePromise<boolean>
  close: () => MaybePromise<void>
}

export function collectionFull (maxCats: number): HttpError {
  return httpError(507, `The collection is full (${maxCats} cats); delete some first`)
}

function catTooLarge (maxCatBytes: number): HttpError {
  return httpError(413, `The merged cat would be larger than ${maxCatBytes} bytes`)
}

/** Shallow-merges `fields` into `cat` in place; `id` never changes. */
export function assignFields (cat: StoredCat, fields: UpdateCatBody): StoredCat {
  for (const [key, value] of Object.entries(fields)) {
    // defineProperty: a key such as __proto__ becomes plain data, never a prototype change
    if (key !== 'id') Object.defineProperty(cat, key, { value, enumerable: true, writable: true, configurable: true })
  }
  return cat
}

/**
 * The cat merged with `fields` (a copy: the original is untouched) and its JSON
 * text; throws a 413 error when that text is over `maxCatBytes`.
 */
export function mergeWithinLimit (cat: StoredCat, fields: UpdateCatBody, maxCatBytes: number): { merged: StoredCat, json: string } {
  const merged = assignFields({ ...cat }, fields)
  const json = JSON.stringify(merged)
  if (Buffer.byteLength(json) > maxCatBytes) throw catTooLarge(maxCatBytes)
  return { merged, json }
}
