import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { CreateCatBody, StoredCat, UpdateCatBody } from './schemas.js'
import {
  IDEMPOTENCY_KEY_TTL_MS, NO_LIMITS, idempotencyKeyBytes, meetsCondition, type CatsPage, type CatsStore, type PageEnd, type IdempotentCreateResult,
  type IdempotentRequest, type StoreLimits, type VersionCondition, type VersionedCat
} from './cats-store.js'
import { IdQueue, nextCatId } from './id-assignment.js'
import { assignFields, mergeWithinLimit } from './merge-rules.js'
import { patchWithinLimit } from './merge-patch.js'
import { CollectionFull, IdempotencyKeyReused, PreconditionFailed } from '../errors.js'

/** A stored cat, its JSON text and version (reads send that text without serializing again), and its place in creation order. */
interface Entry {
  readonly position: number
  cat: StoredCat
  stored: VersionedCat
  /** The UTF-8 bytes of `stored.json`, counted once per write: a page counts them for each cat it reads. */
  bytes: number
  removed: boolean
}

/** An idempotency key as recorded with its cat: a hash of the body, and the answer as it was sent (no other copy). */
interface KeptKey {
  readonly fingerprint: string
  readonly json: string
  readonly at: number
  readonly owner: KeyOwner
  /** What it counts for against the limits (idempotencyKeyBytes). */
  readonly bytes: number
}

/** A client's kept keys, oldest first, and their bytes; it exists while it has any. */
interface KeyOwner {
  readonly client: string
  readonly ids: Set<string>
  bytes: number
}

/**
 * In-memory cats with the specified semantics: a new cat's id is the number of
 * stored cats plus one, so ids repeat after deletes; single-record operations
 * act on the earliest created cat with that id. Every operation but list is O(1)
 * (amortized), and a page is found by binary search.
 * Methods are synchronous; callers may await them like any CatsStore's.
 */
export class MemoryCatsStore implements CatsStore {
  /** Every entry in creation order; removed ones stay until they are half of it, so a removal costs O(1) amortized. */
  #inCreationOrder: Entry[] = []
  /** How many entries of #inCreationOrder are removed ones. */
  #removedInOrder = 0
  #lastPosition = 0
  readonly #byId = new Map<number, IdQueue<Entry>>()
  /**
   * Idempotency keys by scope and key. Nothing ever moves a key once recorded (lookups peek), so the cache's
   * least recently used end holds the oldest: the cap on all keys lets those go first, and expired ones are
   * found there.
   */
  readonly #keys: LRUCache<string, KeptKey>
  /** Every client that has kept keys, for its quota. */
  readonly #owners = new Map<string, KeyOwner>()
  readonly #limits: StoreLimits
  readonly #now: () => number
  /**
   * Versions are this store's own random prefix and the number of its changes so far, so no version repeats, not
   * even after a restart begins with an empty store.
   */
  readonly #epoch = randomBytes(6).toString('base64url')
  #changes = 0

  /** `now` is the clock idempotency keys expire by (milliseconds). */
  constructor (limits: StoreLimits = NO_LIMITS, now: () => number = Date.now) {
    this.#limits = limits
    this.#now = now
    const { maxKeys, maxBytes } = limits.idempotencyKeys
    this.#keys = new LRUCache<string, KeptKey>({
      // 0: no cap on the count (the byte cap still holds).
      max: Number.isFinite(maxKeys) ? maxKeys : 0,
      maxSize: Math.min(maxBytes, Number.MAX_SAFE_INTEGER),
      sizeCalculation: (kept) => kept.bytes,
      // Every way out (the cap, the client's quota, expiry, close) goes through here, so the quotas stay true.
      dispose: (kept, id) => { this.#release(kept, id) }
    })
  }

  /** The idempotency keys kept, and their bytes: all of them, or one client's. */
  keptKeys (client?: string): { keys: number, bytes: number } {
    if (client === undefined) return { keys: this.#keys.size, bytes: this.#keys.calculatedSize }
    const owner = this.#owners.get(client)
    return { keys: owner?.ids.size ?? 0, bytes: owner?.bytes ?? 0 }
  }

  get size (): number {
    return this.#inCreationOrder.length - this.#removedInOrder
  }

  count (): number {
    return this.size
  }

  listVersion (): string {
    return `${this.#epoch}.${this.#changes}`
  }

  #nextVersion (): string {
    return `${this.#epoch}.${++this.#changes}`
  }

  page (after: number, limit: number, maxBytes = Number.POSITIVE_INFINITY, through = Number.POSITIVE_INFINITY): CatsPage {
    const order = this.#inCreationOrder
    const texts: string[] = []
    let last = after
    // The page's bytes so far, the commas between its texts included.
    let bytes = -1
    let index = this.#firstIndexAfter(after)
    for (; index < order.length && texts.length < limit; index++) {
      const entry = order[index]
      if (entry.removed) continue
      if (entry.position > through) break
      bytes += entry.bytes + 1
      if (bytes > maxBytes && texts.length > 0) break
      texts.push(entry.stored.json)
      last = entry.position
    }
    return { items: texts.join(','), cats: texts.length, last, more: this.#follows(index, through) }
  }

  pageEnd (after: number, limit: number): PageEnd {
    const order = this.#inCreationOrder
    let last = after
    let cats = 0
    let index = this.#firstIndexAfter(after)
    for (; index < order.length && cats < limit; index++) {
      if (order[index].removed) continue
      cats++
      last = order[index].position
    }
    return { last, more: this.#follows(index, Number.POSITIVE_INFINITY) }
  }

  /** Whether a live cat at or after `index` has a position of at most `through`. */
  #follows (index: number, through: number): boolean {
    const order = this.#inCreationOrder
    while (index < order.length && order[index].removed) index++
    return index < order.length && order[index].position <= through
  }

  find (id: number): VersionedCat | undefined {
    return this.#byId.get(id)?.first?.stored
  }

  createJson (fields: CreateCatBody): string {
    return this.#add(fields).stored.json
  }

  #add (fields: CreateCatBody): Entry {
    if (this.size >= this.#limits.maxCats) throw new CollectionFull(this.#limits.maxCats)
    const cat: StoredCat = { id: nextCatId(this.size), name: fields.name, age: fields.age, breed: fields.breed }
    const json = JSON.stringify(cat)
    const entry: Entry = { position: ++this.#lastPosition, cat, stored: { json, version: this.#nextVersion() }, bytes: Buffer.byteLength(json), removed: false }
    this.#inCreationOrder.push(entry)
    let queue = this.#byId.get(cat.id)
    if (queue === undefined) {
      queue = new IdQueue()
      this.#byId.set(cat.id, queue)
    }
    queue.push(entry)
    return entry
  }

  /** Synchronous, so a first request is never in progress when its repeat arrives. */
  createOnce (fields: CreateCatBody, request: IdempotentRequest): IdempotentCreateResult {
    const now = this.#now()
    this.#forgetExpiredKeys(now)
    const id = `${request.scope}\n${request.key}`
    const kept = this.#keys.peek(id)
    if (kept !== undefined) {
      if (kept.fingerprint !== request.fingerprint) throw new IdempotencyKeyReused()
      return { replayed: true, json: kept.json }
    }
    const { json } = this.#add(fields).stored
    this.#keep(id, request, json, now)
    return { replayed: false, json }
  }

  /** Shallow-merges the fields into the cat; `id` never changes. */
  update (id: number, fields: UpdateCatBody, condition?: VersionCondition): VersionedCat | undefined {
    const entry = this.#earliest(id, condition)
    if (entry === undefined) return undefined
    const { json } = mergeWithinLimit(entry.cat, fields, this.#limits.maxCatBytes)
    // In place: the list order and the id index refer to this object.
    assignFields(entry.cat, fields)
    return this.#rewritten(entry, json)
  }

  patch (id: number, patch: UpdateCatBody, condition?: VersionCondition): VersionedCat | undefined {
    const entry = this.#earliest(id, condition)
    if (entry === undefined) return undefined
    const { merged, json } = patchWithinLimit(entry.cat, patch, this.#limits.maxCatBytes)
    entry.cat = merged
    return this.#rewritten(entry, json)
  }

  /** Removes the earliest created cat with this id, if any. */
  remove (id: number, condition?: VersionCondition): void {
    const entry = this.#earliest(id, condition)
    if (entry === undefined) return
    const queue = this.#byId.get(id) as IdQueue<Entry>
    queue.shift()
    if (queue.size === 0) this.#byId.delete(id)
    entry.removed = true
    this.#removedInOrder++
    this.#changes++
    if (this.#removedInOrder * 2 > this.#inCreationOrder.length) {
      this.#inCreationOrder = this.#inCreationOrder.filter((kept) => !kept.removed)
      this.#removedInOrder = 0
    }
  }

  /** The earliest created cat with this id, when it meets the condition; throws PreconditionFailed when it does not. */
  #earliest (id: number, condition: VersionCondition | undefined): Entry | undefined {
    const entry = this.#byId.get(id)?.first
    if (condition !== undefined && !meetsCondition(condition, entry?.stored.version)) throw new PreconditionFailed()
    return entry
  }

  #rewritten (entry: Entry, json: string): VersionedCat {
    entry.stored = { json, version: this.#nextVersion() }
    entry.bytes = Buffer.byteLength(json)
    return entry.stored
  }

  /**
   * Records the key within its client's quota: the client's own oldest keys make way first, then the cache lets
   * the oldest of all go if the cap needs it. A key larger than a client may hold is not kept at all: a repeat
   * creates again, as after the key's lifetime.
   */
  #keep (id: string, request: IdempotentRequest, json: string, at: number): void {
    const { maxBytes, clientMaxKeys, clientMaxBytes } = this.#limits.idempotencyKeys
    const bytes = idempotencyKeyBytes(request, json)
    if (bytes > clientMaxBytes || bytes > maxBytes) return
    const existing = this.#owners.get(request.client)
    if (existing !== undefined) {
      // A Set iterates in insertion order, oldest first, and the visited entry may be deleted.
      for (const oldest of existing.ids) {
        if (existing.ids.size < clientMaxKeys && existing.bytes + bytes <= clientMaxBytes) break
        this.#keys.delete(oldest)
      }
    }
    // Looked up again: letting go of its last key forgets the client.
    let owner = this.#owners.get(request.client)
    if (owner === undefined) {
      owner = { client: request.client, ids: new Set(), bytes: 0 }
      this.#owners.set(owner.client, owner)
    }
    // Counted before it enters the cache, so the client is not forgotten if the cap lets its other keys go.
    owner.ids.add(id)
    owner.bytes += bytes
    this.#keys.set(id, { fingerprint: request.fingerprint, json, at, owner, bytes })
  }

  #release (kept: KeptKey, id: string): void {
    const owner = kept.owner
    owner.ids.delete(id)
    owner.bytes -= kept.bytes
    if (owner.ids.size === 0) this.#owners.delete(owner.client)
  }

  /** Lets go of the keys past their lifetime: the oldest, at the cache's least recently used end. */
  #forgetExpiredKeys (now: number): void {
    const expired: string[] = []
    for (const id of this.#keys.rkeys()) {
      const kept = this.#keys.peek(id)
      if (kept === undefined || now - kept.at < IDEMPOTENCY_KEY_TTL_MS) break
      expired.push(id)
    }
    for (const id of expired) this.#keys.delete(id)
  }

  /** The index of the first entry created after `position`: positions only grow along the creation order. */
  #firstIndexAfter (position: number): number {
    const order = this.#inCreationOrder
    let low = 0
    let high = order.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (order[middle].position <= position) low = middle + 1
      else high = middle
    }
    return low
  }
}
