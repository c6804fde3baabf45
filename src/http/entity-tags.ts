import type { VersionCondition } from '../cats/cats-store.js'

/**
 * Entity tags (RFC 9110 §8.8.3) as the cats routes send and compare them. A tag is a version in quotes: strong
 * for one cat, weak (W/) for the list, whose text may differ while the cats are the same.
 */
export const strongTag = (version: string): string => `"${version}"`
export const weakTag = (version: string): string => `W/"${version}"`

interface EntityTag {
  weak: boolean
  opaque: string
}

// One entity tag of a list, and the comma after it. Tags hold no quote; anything else in the header ends the list.
const LISTED_TAG = /\s*(W\/)?"([^"]*)"\s*(?:,|$)/y

/** An If-Match or If-None-Match value: '*', or the tags it lists (those up to anything that is not a tag). */
function parseTags (header: string): '*' | EntityTag[] {
  if (header.trim() === '*') return '*'
  const tags: EntityTag[] = []
  LISTED_TAG.lastIndex = 0
  for (let match = LISTED_TAG.exec(header); match !== null && match[0] !== ''; match = LISTED_TAG.exec(header)) {
    tags.push({ weak: match[1] !== undefined, opaque: match[2] })
  }
  return tags
}

/**
 * If-Match as a store condition: strong comparison, so a weak tag never matches (§13.1.1). Undefined without the
 * header.
 */
export function ifMatchCondition (header: string | undefined): VersionCondition | undefined {
  if (header === undefined) return undefined
  const tags = parseTags(header)
  return tags === '*' ? '*' : tags.filter((tag) => !tag.weak).map((tag) => tag.opaque)
}

/** Whether If-None-Match names this version (weak comparison, §13.1.2): a GET answers 304 then. */
export function noneMatch (header: string | undefined, version: string): boolean {
  if (header === undefined) return false
  const tags = parseTags(header)
  return tags === '*' || tags.some((tag) => tag.opaque === version)
}
