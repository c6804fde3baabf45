/**
 * Entity tags (RFC 9110 §8.8.3) as the cats routes send and compare them. A tag is a version in quotes: strong
 * for one cat, weak (W/) for the list, whose text may differ while the cats are the same.
 */

/** The versions a precondition names: '*' for any, else those listed. */
export type VersionList = '*' | readonly string[]

export const strongTag = (version: string): string => `"${version}"`
export const weakTag = (version: string): string => `W/"${version}"`

interface EntityTag {
  weak: boolean
  opaque: string
}

// One entity tag of a list (after any empty elements), and the comma after it. Tags hold no quote; anything else in
// the header ends the list.
const LISTED_TAG = /[\s,]*(W\/)?"([^"]*)"\s*(?:,|$)/y

/** An If-Match or If-None-Match value: '*', or the tags it lists (those up to anything that is not a tag). */
function parseTags (header: string): '*' | EntityTag[] {
  if (header.trim() === '*') return '*'
  const tags: EntityTag[] = []
  LISTED_TAG.lastIndex = 0
  for (let match = LISTED_TAG.exec(header); match !== null; match = LISTED_TAG.exec(header)) {
    tags.push({ weak: match[1] !== undefined, opaque: match[2] })
  }
  return tags
}

/** If-Match's versions: strong comparison, so a weak tag never matches (§13.1.1). Undefined without the header. */
export function ifMatchVersions (header: string | undefined): VersionList | undefined {
  if (header === undefined) return undefined
  const tags = parseTags(header)
  return tags === '*' ? '*' : tags.filter((tag) => !tag.weak).map((tag) => tag.opaque)
}

/** If-None-Match's versions: weak comparison, so W/ does not matter (§13.1.2). Undefined without the header. */
export function ifNoneMatchVersions (header: string | undefined): VersionList | undefined {
  if (header === undefined) return undefined
  const tags = parseTags(header)
  return tags === '*' ? '*' : tags.map((tag) => tag.opaque)
}
