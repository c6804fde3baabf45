import { parse } from 'content-type'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { MAX_INSTANCE_CHARS, PROBLEM_TYPE_PREFIX } from './error-limits.js'
import type { ErrorReply, ProblemDetails } from './error-schemas.js'

/**
 * Problem Details on request (RFC 9457): a client whose Accept header prefers `application/problem+json`
 * gets every error in that shape; any other client gets the service's own error body. `sendError` is the
 * one place an error answer picks its shape.
 */

export const PROBLEM_JSON = 'application/problem+json; charset=utf-8'
const ERROR_JSON = 'application/json; charset=utf-8'

/** A media range of an Accept header (a type, all subtypes of a type, or all types) and its weight. */
interface MediaRange {
  type: string
  subtype: string
  weight: number
}

// RFC 9110 §12.4.2: 0 to 1 with at most three decimals.
const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/

/** The ranges of an Accept header; one that is not a media range, or whose weight is malformed, is left out. */
function mediaRanges (accept: string): MediaRange[] {
  const ranges: MediaRange[] = []
  for (let start = 0; start < accept.length;) {
    // content-type's parser reads one range up to the next comma outside quotes; it never throws.
    const { type: range, parameters, index } = parse(accept, { comma: true, start })
    start = index + 1
    const [type, subtype, ...rest] = range.split('/')
    const q = parameters.q ?? '1'
    const wellFormed = subtype !== undefined && subtype !== '' && type !== '' && rest.length === 0 && (type !== '*' || subtype === '*')
    if (wellFormed && QVALUE.test(q)) ranges.push({ type, subtype, weight: Number(q) })
  }
  return ranges
}

/** How closely `range` names `type/subtype`: 2 exactly, 1 as `type/*`, 0 as the range of all types; -1 not at all. */
function specificity (range: MediaRange, type: string, subtype: string): number {
  if (range.type === '*') return 0
  if (range.type !== type) return -1
  if (range.subtype === subtype) return 2
  return range.subtype === '*' ? 1 : -1
}

/**
 * The weight a client gives `type/subtype` (RFC 9110 §12.5.1): that of the most specific range that matches
 * it, the highest when that range is listed twice; 0 when none matches.
 */
function weightOf (ranges: MediaRange[], type: string, subtype: string): number {
  let best = { specificity: -1, weight: 0 }
  for (const range of ranges) {
    const closeness = specificity(range, type, subtype)
    if (closeness < 0) continue
    if (closeness > best.specificity || (closeness === best.specificity && range.weight > best.weight)) best = { specificity: closeness, weight: range.weight }
  }
  return best.weight
}

// Most clients never name the type: their header is not parsed at all.
const NAMES_PROBLEM_JSON = /problem\+json/i

/**
 * Whether the client prefers `application/problem+json` to `application/json`: a strictly higher weight.
 * No header, the range of all types alone, `application/*` alone, equal weights, or a header that is not a
 * list of media ranges keep the service's own body.
 */
export function prefersProblemDetails (accept: string | undefined): boolean {
  if (accept === undefined || !NAMES_PROBLEM_JSON.test(accept)) return false
  const ranges = mediaRanges(accept)
  return weightOf(ranges, 'application', 'problem+json') > weightOf(ranges, 'application', 'json')
}

/** The path of a request target: what precedes its query. */
function pathOf (url: string): string {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

// What a path may hold as it is (RFC 3986: unreserved, sub-delims, ':', '@', '/', and '%' of an escape).
const NOT_IN_PATH = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]|%(?![0-9A-Fa-f]{2})/gu

/** A character's UTF-8 bytes as percent-escapes (a lone surrogate as U+FFFD's). */
const percentEncoded = (character: string): string =>
  [...Buffer.from(character, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('')

/**
 * The path as a URI reference of at most `maxChars` characters: any character a path may not hold (a stray `%`
 * included) percent-encoded, as UTF-8, then a longer one cut after its first `maxChars` characters, never inside
 * a percent-escape. A cut path is still a reference (no ellipsis, which a URI may not hold): the start of the
 * path the client sent.
 */
export function instanceOf (path: string, maxChars: number): string {
  const reference = path.replace(NOT_IN_PATH, (character) => percentEncoded(character))
  if (reference.length <= maxChars) return reference
  const escape = reference.lastIndexOf('%', maxChars - 1)
  // An escape is three characters: one that starts in the last two kept would be split.
  return reference.slice(0, escape !== -1 && escape > maxChars - 3 ? escape : maxChars)
}

/** The error body as Problem Details for the request to `url`: the same status, message, code and issues. */
export function problemDetails ({ statusCode, error, message, code, validation }: ErrorReply, url: string): ProblemDetails {
  const problem: ProblemDetails = {
    type: `${PROBLEM_TYPE_PREFIX}${code}`,
    title: error,
    status: statusCode,
    detail: message,
    instance: instanceOf(pathOf(url), MAX_INSTANCE_CHARS),
    code
  }
  if (validation !== undefined) problem.validation = validation
  return problem
}

// A field list that already names Accept, or `*` (every field), needs nothing added.
const VARIES_BY_ACCEPT = /(?:^|,)\s*(?:accept|\*)\s*(?:,|$)/i

/** A Vary value that adds Accept to what is there (CORS adds Origin), so a cache keeps the two shapes apart. */
export function varyByAccept (vary: string | number | string[] | undefined): string {
  const fields = Array.isArray(vary) ? vary.join(', ') : vary === undefined ? '' : String(vary)
  if (fields.trim() === '') return 'Accept'
  return VARIES_BY_ACCEPT.test(fields) ? fields : `${fields}, Accept`
}

/**
 * Sends an error body with its status, as Problem Details when the client prefers them. Headers set before
 * (Retry-After, WWW-Authenticate) stay; Vary gains Accept, as the body depends on it.
 */
export function sendError (request: FastifyRequest, reply: FastifyReply, body: ErrorReply): void {
  reply.code(body.statusCode).header('vary', varyByAccept(reply.getHeader('vary')))
  if (prefersProblemDetails(request.headers.accept)) reply.type(PROBLEM_JSON).send(problemDetails(body, request.url))
  else reply.type(ERROR_JSON).send(body)
}
