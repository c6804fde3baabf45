import type { CreateCatBody, UpdateCatBody } from './schemas.js'
import type { MaybePromise } from '../maybe-promise.js'
import type { VersionList } from '../http/entity-tags.js'

/** Limits every store enforces the same way. */
export interface StoreLimits {
  /** Most cats stored; a create past it fails with CollectionFull. */
  maxCats: number
  /** Largest stored cat, as JSON bytes; a merge past it fails with CatTooLarge. */
  maxCatBytes: number
  idempotencyKeys: IdempotencyKeyLimits
}

/**
 * How many idempotency keys are kept, counted in keys and in bytes (idempotencyKeyBytes). At its quota a
 * client's own oldest key makes way for its new one, so a client never pushes out another's keys; at the cap
 * on all of them the oldest key of any client goes, and since no client holds more than its quota, pushing out
 * the others' keys takes many clients.
 */
export interface IdempotencyKeyLimits {
  maxKeys: number
  maxBytes: number
  clientMaxKeys: number
  clientMaxBytes: number
}

/** How long an idempotency key is kept at most: a repeat within it is replayed, one after it is a new request. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000

/** A create that may be repeated: the same key and fingerprint within the lifetime get the first answer back. */
export interface IdempotentRequest {
  /** Whose key it is: the user when keys are per user, '' when they are shared. */
  scope: string
  key: string
  /** Identifies the request body: the same key with another fingerprint is refused. */
  fingerprint: string
  /** Whose quota the key counts against: the user, or the client's address when creates are public. */
  client: string
}

/**
 * What a kept key is counted as besides its texts: the bookkeeping around it (the entry, its places in the
 * cache and in its client's set, the strings' headers), about what it costs in the memory store's heap
 * (measured: 560 bytes for a key of a 4-character name, of which its texts are 140).
 */
export const KEY_OVERHEAD_BYTES = 512

/** The bytes a kept key counts for against the limits: its texts as UTF-8 (the answer kept as it is) plus the bookkeeping. */
export function idempotencyKeyBytes ({ scope, key, fingerprint, client }: IdempotentRequest, json: string): number {
  return KEY_OVERHEAD_BYTES + Buffer.byteLength(scope) + Buffer.byteLength(key) + Buffer.byteLength(fingerprint) + Buffer.byteLength(client) +
    Buffer.byteLength(json)
}

/** A create with a key: the new cat's JSON text as stored, or (replayed) the JSON text answered the first time. */
export interface IdempotentCreateResult {
  replayed: boolean
  json: string
}

const NONE = Number.POSITIVE_INFINITY
export const NO_LIMITS: StoreLimits = {
  maxCats: NONE,
  maxCatBytes: NONE,
  idempotencyKeys: { maxKeys: NONE, maxBytes: NONE, clientMaxKeys: NONE, clientMaxBytes: NONE }
}

/** A slice of the list in creation order. */
export interface CatsPage {
  /** The cats' JSON texts joined by commas, without brackets; empty when there are none. */
  items: string
  /** How many cats the page holds. */
  cats: number
  /** The position of the page's last cat, to pass as `after` for the next page (`after` itself when empty). */
  last: number
  /** Whether cats follow this page (up to `through` when the read had one). */
  more: boolean
}

/** Where a page of a given size ends, read before its cats are (see CatsStore.pageEnd). */
export interface PageEnd {
  /** The position of the page's last cat (`after` itself when none follows it). */
  last: number
  /** Whether cats follow the page. */
  more: boolean
}

/** A cat as stored: its JSON text and its version. Every write gives the cat a version no cat has had before. */
export interface VersionedCat {
  readonly json: string
  readonly version: string
}

/**
 * The preconditions of a request (RFC 9110 §13.1): `match` (If-Match) holds when the cat exists with one of those
 * versions, `noneMatch` (If-None-Match) when no cat has the id or its version is not one of those. A write whose
 * condition fails throws PreconditionFailed and changes nothing.
 */
export interface VersionCondition {
  readonly match?: VersionList
  readonly noneMatch?: VersionList
}

const lists = (versions: VersionList, version: string): boolean => versions === '*' || versions.includes(version)

/** Whether the cat of this version (undefined: no cat has the id) meets the condition. */
export function meetsCondition ({ match, noneMatch }: VersionCondition, version: string | undefined): boolean {
  if (match !== undefined && (version === undefined || !lists(match, version))) return false
  return noneMatch === undefined || version === undefined || !lists(noneMatch, version)
}

/**
 * The contract the routes use, whatever keeps the cats (memory, PostgreSQL, PGlite).
 * Semantics: a new cat's id is the number of stored cats
 * plus one; find, update, patch and remove act on the earliest created cat with an id;
 * pages are in creation order; update shallow-merges every field but `id`.
 */
export interface CatsStore {
  count: () => MaybePromise<number>
  /** Changes whenever any cat is created, written or removed: the list's weak ETag. */
  listVersion: () => MaybePromise<string>
  /**
   * Up to `limit` cats created after the cat at `after` (0: from the first), in creation order, as the
   * JSON text stored. Positions only grow, so paging by the last position neither skips nor repeats a cat.
   * With `maxBytes`, the page stops before the cat that would take its text (commas included) past that
   * many UTF-8 bytes, but holds at least one cat when any follows. With `through`, only cats at positions up to
   * it are read, and `more` says whether any of those follow.
   */
  page: (after: number, limit: number, maxBytes?: number, through?: number) => MaybePromise<CatsPage>
  /**
   * Where the page of up to `limit` cats after `after` ends, without reading their texts: a page too large for one
   * chunk is streamed, and its Link header, sent first, needs its last position and whether cats follow it.
   */
  pageEnd: (after: number, limit: number) => MaybePromise<PageEnd>
  /** The earliest created cat with this id; undefined when none has it. */
  find: (id: number) => MaybePromise<VersionedCat | undefined>
  /** The new cat as JSON text, as stored; throws CollectionFull when the store holds `maxCats` already. */
  createJson: (fields: CreateCatBody) => MaybePromise<string>
  /**
   * Creates the cat and records the key with it atomically, or, when the key was recorded within
   * IDEMPOTENCY_KEY_TTL_MS and is still kept, creates nothing and returns the cat's JSON as created (either way as
   * JSON text). Recording a key lets go of the oldest keys that `limits.idempotencyKeys` no longer leaves room for.
   * Throws IdempotencyKeyReused for another fingerprint, IdempotencyKeyInUse while the first
   * request with the key is still running, CollectionFull as create does (and records nothing).
   */
  createOnce: (fields: CreateCatBody, request: IdempotentRequest) => MaybePromise<IdempotentCreateResult>
  /**
   * PUT: the cat with `fields` shallow-merged in; undefined when no cat has this id (and the condition allows that).
   * Throws CatTooLarge when the merged cat would exceed `maxCatBytes`, PreconditionFailed as VersionCondition says.
   */
  update: (id: number, fields: UpdateCatBody, condition?: VersionCondition) => MaybePromise<VersionedCat | undefined>
  /** PATCH: as update, with `patch` applied as an RFC 7396 merge patch (see merge-patch.ts). */
  patch: (id: number, patch: UpdateCatBody, condition?: VersionCondition) => MaybePromise<VersionedCat | undefined>
  /** Removes the earliest created cat with this id, if any; throws PreconditionFailed as VersionCondition says. */
  remove: (id: number, condition?: VersionCondition) => MaybePromise<void>
}
