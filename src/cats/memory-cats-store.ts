import type { CreateCatBody, StoredCat, UpdateCatBody } from './schemas.js'
import { NO_LIMITS, type CatsStore, type StoreLimits } from './cats-store.js'
import { IdQueue, nextCatId } from './id-assignment.js'
import { assignFields, mergeWithinLimit } from './merge-rules.js'
import { CollectionFullError } from './store-errors.js'

/**
 * In-memory cats with the specified semantics: a new cat's id is the number of
 * stored cats plus one, so ids repeat after deletes; single-record operations
 * act on the earliest created cat with that id. Every operation but list is O(1).
 * Methods are synchronous; callers may await them like any CatsStore.
 */
export class MemoryCatsStore implements CatsStore {
  /** Every cat in creation order, with its JSON text: reads send that text without serializing again. */
  readonly #inCreationOrder = new Map<StoredCat, string>()
  readonly #byId = new Map<number, IdQueue>()
  readonly #limits: StoreLimits

  constructor (limits: StoreLimits = NO_LIMITS) {
    this.#limits = limits
  }

  get size (): number {
    return this.#inCreationOrder.size
  }

  count (): number {
    return this.size
  }

  list (): StoredCat[] {
    return Array.from(this.#inCreationOrder.keys())
  }

  listJson (): string {
    return `[${Array.from(this.#inCreationOrder.values()).join(',')}]`
  }

  find (id: number): StoredCat | undefined {
    return this.#byId.get(id)?.first
  }

  findJson (id: number): string | undefined {
    const cat = this.find(id)
    return cat === undefined ? undefined : this.#inCreationOrder.get(cat)
  }

  create (fields: CreateCatBody): StoredCat {
    if (this.size >= this.#limits.maxCats) throw new CollectionFullError(this.#limits.maxCats)
    const cat: StoredCat = { id: nextCatId(this.size), name: fields.name, age: fields.age, breed: fields.breed }
    this.#inCreationOrder.set(cat, JSON.stringify(cat))
    let queue = this.#byId.get(cat.id)
    if (queue === undefined) {
      queue = new IdQueue()
      this.#byId.set(cat.id, queue)
    }
    queue.push(cat)
    return cat
  }

  /** Shallow-merges the fields into the cat; `id` never changes. */
  update (id: number, fields: UpdateCatBody): StoredCat | undefined {
    const cat = this.find(id)
    if (cat === undefined) return undefined
    const { json } = mergeWithinLimit(cat, fields, this.#limits.maxCatBytes)
    // In place: the list order and the id index refer to this object.
    this.#inCreationOrder.set(assignFields(cat, fields), json)
    return cat
  }

  /** Removes the earliest created cat with this id, if any. */
  remove (id: number): void {
    const queue = this.#byId.get(id)
    const cat = queue?.first
    if (queue === undefined || cat === undefined) return
    queue.shift()
    if (queue.size === 0) this.#byId.delete(id)
    this.#inCreationOrder.delete(cat)
  }

  isReady (): boolean {
    return true
  }

  close (): void {
    this.#inCreationOrder.clear()
    this.#byId.clear()
  }
}
