import type { StoredCat, UpdateCatBody } from './schemas.js'
import { findMergeProblems } from './merge-safety.js'
import { CatTooLarge } from '../errors.js'
import { type FieldError } from '../http/validation-issues.js'
import { MAX_ISSUES } from '../http/error-limits.js'

/** The fields every cat keeps: a patch may replace them but not remove them. */
const KEPT_FIELDS = ['name', 'age', 'breed']

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * RFC 7396's MergePatch: a member patched with `null` is removed, one patched with an object is merged with it
 * recursively (a non-object member counts as `{}`), and any other value replaces it. Returns a new value and
 * leaves the target untouched. Keys are defined as data, so `__proto__` is never a prototype change.
 */
export function mergePatch (target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {}
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) Reflect.deleteProperty(result, key)
    else Object.defineProperty(result, key, { value: mergePatch(Object.hasOwn(result, key) ? result[key] : undefined, value), enumerable: true, writable: true, configurable: true })
  }
  return result
}

/**
 * PATCH: the cat with the merge patch applied (a copy) and its JSON text. `id` in the patch is ignored, as PUT
 * ignores it; the route refuses `null` for name, age and breed, so the cat keeps them. Throws CatTooLarge when the
 * text is over `maxCatBytes`.
 */
export function patchWithinLimit (cat: StoredCat, patch: UpdateCatBody, maxCatBytes: number): { merged: StoredCat, json: string } {
  const fields = Object.fromEntries(Object.entries(patch).filter(([key]) => key !== 'id'))
  // mergePatch returns an object for an object patch, with every member of the cat the patch does not remove.
  const merged = mergePatch(cat, fields) as StoredCat
  const json = JSON.stringify(merged)
  if (Buffer.byteLength(json) > maxCatBytes) throw new CatTooLarge(maxCatBytes)
  return { merged, json }
}

/** What makes a merge patch unacceptable: `null` for a kept field, and whatever makes a PUT body unsafe. */
export function findPatchProblems (patch: UpdateCatBody): FieldError[] {
  const removed = KEPT_FIELDS.filter((key) => Object.hasOwn(patch, key) && patch[key] === null)
    .map((key): FieldError => ({ instancePath: `/${key}`, message: 'must not be null: a cat keeps its name, age and breed' }))
  return [...removed, ...findMergeProblems(patch, MAX_ISSUES - removed.length)]
}
