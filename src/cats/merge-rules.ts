import type { StoredCat, UpdateCatBody } from './schemas.js'
import { CatTooLarge } from '../errors.js'

/** The fields a merge writes, in the order it writes them: every one but `id`, which never changes. */
export function mergedEntries (fields: UpdateCatBody): Array<[string, unknown]> {
  return Object.entries(fields).filter(([key]) => key !== 'id')
}

/** Shallow-merges `fields` into `cat` in place. */
export function assignFields (cat: StoredCat, fields: UpdateCatBody): StoredCat {
  for (const [key, value] of mergedEntries(fields)) {
    // defineProperty: a key such as __proto__ becomes plain data, never a prototype change
    Object.defineProperty(cat, key, { value, enumerable: true, writable: true, configurable: true })
  }
  return cat
}

/**
 * The cat merged with `fields` (a copy: the original is untouched) and its JSON
 * text; throws CatTooLarge when that text is over `maxCatBytes`.
 */
export function mergeWithinLimit (cat: StoredCat, fields: UpdateCatBody, maxCatBytes: number): { merged: StoredCat, json: string } {
  const merged = assignFields({ ...cat }, fields)
  const json = JSON.stringify(merged)
  if (Buffer.byteLength(json) > maxCatBytes) throw new CatTooLarge(maxCatBytes)
  return { merged, json }
}
