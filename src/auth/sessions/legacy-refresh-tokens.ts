/**
 * The refresh tokens issued before session records (256 random bits, kept as their SHA-256 hash in the session
 * that migration 7 made of each) are known without asking the database: the first 8 bytes of every such hash,
 * sorted, read once. Only migration 7 ever made one, so the set read after it never misses a genuine token; a
 * token of that form that is not in it (a stranger's guess) costs no query, and one that is (a genuine token, or
 * one guess in 2^64 / its size) is looked up by its whole hash.
 */
export class LegacyTokenHashes {
  readonly #prefixes: BigUint64Array

  constructor (hashes: Uint8Array[]) {
    this.#prefixes = BigUint64Array.from(hashes.map(prefixOf)).sort()
  }

  get size (): number {
    return this.#prefixes.length
  }

  /** Whether a legacy token with this SHA-256 hash may exist. */
  mayHave (hash: Uint8Array): boolean {
    const prefix = prefixOf(hash)
    let low = 0
    let high = this.#prefixes.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.#prefixes[middle] < prefix) low = middle + 1
      else high = middle
    }
    return this.#prefixes[low] === prefix
  }
}

// PostgreSQL's client gives a bytea as a Buffer, PGlite's as a Uint8Array.
const prefixOf = (hash: Uint8Array): bigint => new DataView(hash.buffer, hash.byteOffset, hash.byteLength).getBigUint64(0)
