import type { CreateCatBody, StoredCat, UpdateCatBody } from './schemas.js'
import {
  IDEMPOTENCY_KEY_TTL_MS, NO_LIMITS, type CatsPage, type CatsStore, type IdempotentCreateResult, type IdempotentRequest, type StoreLimits
} from './cats-store.js'
import { IdQueue, nextCatId } from './id-assignment.js'
import { assignFields, mergeWithinLimit } from './merge-rules.js'
import { CollectionFullError, IdempotencyKeyReusedError } from './store-errors.js'

/** A stored cat with its JSON text (reads send that text without serializing again) and its place in creation order. */
interface Entry {
  readonly position: number
  readonly cat: StoredCat
  json: string
  removed: boolean
}

/** An idempotency key as recorded with its cat. */
interface KeptKey {
  readonly fingerprint: string
  readonly json: string
  readonly at: number
}

/**
 * In-memory cats with the specified semantics: a new cat's id is the number of
 * stored cats plus one, so ids repeat after deletes; single-record operations
 * act on the earliest created cat with that id. Every operation but list is O(1)
 * (amortized), and a page is found by binary search.
 * Methods are synchronous; callers may await them like any CatsStore.
 */
export class MemoryCatsStore implements CatsStore {
  /** Every entry in creation order; removed ones stay until they are half of it, so a removal costs O(1) amortized. */
  #inCreationOrder: Entry[] = []
  /** How many entries of #inCreationOrder are removed ones. */
  #removedInOrder = 0
  #lastPosition = 0
  readonly #byId = new Map<number, IdQueue<Entry>>()
  /** Idempotency keys by scope and key, oldest first, so expired ones are swept from the front. */
  readonly #keys = new Map<string, KeptKey>()
  readonly #limits: StoreLimits
  readonly #now: () => number

  /** `now` is the clock idempotency keys expire by (milliseconds). */
  constructor (limits: StoreLimits = NO_LIMITS, now: () => number = Date.now) {
    this.#limits = limits
    this.#now = now
  }

  get size (): number {
    return this.#inCreationOrder.length - this.#removedInOrder
  }

  count (): number {
    return this.size
  }

  list (): StoredCat[] {
    const cats: StoredCat[] = []
    for (const entry of this.#inCreationOrder) if (!entry.removed) cats.push(entry.cat)
    return cats
  }

  page (after: number, limit: number, maxBytes = Number.POSITIVE_INFINITY): CatsPage {
    const order = this.#inCreationOrder
    const texts: string[] = []
    let last = after
    // The page's bytes so far, the commas between its texts included.
    let bytes = -1
    let index = this.#firstIndexAfter(after)
    for (; index < order.length && texts.length < limit; index++) {
      const entry = order[index]
      if (entry.removed) continue
      bytes += Buffer.byteLength(entry.json) + 1
      if (bytes > maxBytes && texts.length > 0) break
      texts.push(entry.json)
      last = entry.position
    }
    while (index < order.length && order[index].removed) index++
    return { items: texts.join(','), last, more: index < order.length }
  }

  find (id: number): StoredCat | undefined {
    return this.#byId.get(id)?.first?.cat
  }

  findJson (id: number): string | undefined {
    return this.#byId.get(id)?.first?.json
  }

  create (fields: CreateCatBody): StoredCat {
    return this.#add(fields).cat
  }

  createJson (fields: CreateCatBody): string {
    return this.#add(fields).json
  }

  #add (fields: CreateCatBody): Entry {
    if (this.size >= this.#limits.maxCats) throw new CollectionFullError(this.#limits.maxCats)
    const cat: StoredCat = { id: nextCatId(this.size), name: fields.name, age: fields.age, breed: fields.breed }
    const entry: Entry = { position: ++this.#lastPosition, cat, json: JSON.stringify(cat), removed: false }
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
    this.#sweepKeys(now)
    const id = `${request.scope}\n${request.key}`
    const kept = this.#keys.get(id)
    if (kept !== undefined) {
      if (kept.fingerprint !== request.fingerprint) throw new IdempotencyKeyReusedError()
      return { replayed: true, json: kept.json }
    }
    const { json } = this.#add(fields)
    this.#keys.set(id, { fingerprint: request.fingerprint, json, at: now })
    return { replayed: false, json }
  }

  /** Shallow-merges the fields into the cat; `id` never changes. */
  update (id: number, fields: UpdateCatBody): StoredCat | undefined {
    return this.#merge(id, fields)?.cat
  }

  updateJson (id: number, fields: UpdateCatBody): string | undefined {
    return this.#merge(id, fields)?.json
  }

  /** Removes the earliest created cat with this id, if any. */
  remove (id: number): void {
    const queue = this.#byId.get(id)
    const entry = queue?.first
    if (queue === undefined || entry === undefined) return
    queue.shift()
    if (queue.size === 0) this.#byId.delete(id)
    entry.removed = true
    this.#removedInOrder++
    if (this.#removedInOrder * 2 > this.#inCreationOrder.length) {
      this.#inCreationOrder = this.#inCreationOrder.filter((kept) => !kept.removed)
      this.#removedInOrder = 0
    }
  }

  isReady (): boolean {
    return true
  }

  close (): void {
    this.#keys.clear()
    this.#inCreationOrder = []
    this.#removedInOrder = 0
    this.#byId.clear()
  }

  #merge (id: number, fields: UpdateCatBody): Entry | undefined {
    const entry = this.#byId.get(id)?.first
    if (entry === undefined) return undefined
    const { json } = mergeWithinLimit(entry.cat, fields, this.#limits.maxCatBytes)
    // In place: the list order and the id index refer to this object.
    assignFields(entry.cat, fields)
    entry.json = json
    return entry
  }

  #sweepKeys (now: number): void {
    for (const [id, kept] of this.#keys) {
      if (now - kept.at < IDEMPOTENCY_KEY_TTL_MS) return
      this.#keys.delete(id)
    }
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
