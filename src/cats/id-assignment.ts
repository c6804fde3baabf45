import type { StoredCat } from './schemas.js'

/**
 * A new cat's id is the number of stored cats plus one, so ids repeat after a
 * delete. Read, update and delete then act on the earliest created cat with
 * the id. (The SQL store computes the same in its create statement.)
 */
export const nextCatId = (storedCats: number): number => storedCats + 1

/** The cats (or the store's records of them) that share one id, earliest created first. Only the head is ever removed. */
export class IdQueue<Item = StoredCat> {
  readonly #cats: Item[] = []
  #head = 0

  get first (): Item | undefined {
    return this.#cats[this.#head]
  }

  get size (): number {
    return this.#cats.length - this.#head
  }

  push (cat: Item): void {
    this.#cats.push(cat)
  }

  shift (): void {
    this.#head++
    // Compact once the removed part dominates, keeping removal O(1) amortized.
    if (this.#head * 2 > this.#cats.length) {
      this.#cats.splice(0, this.#head)
      this.#head = 0
    }
  }
}
