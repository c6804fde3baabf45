import { STATUS_CODES } from 'node:http'
import type { ErrorReply, ValidationIssue } from './error-schemas.js'
import { MAX_MESSAGE_CHARS } from './error-limits.js'

/** What an error body is made of: the status, the stable code and a message meant for the client. */
export interface ErrorFacts {
  statusCode: number
  code: string
  message: string
}

const ELLIPSIS = '…'
const isHighSurrogate = (unit: number): boolean => unit >= 0xD800 && unit <= 0xDBFF
const isLowSurrogate = (unit: number): boolean => unit >= 0xDC00 && unit <= 0xDFFF

/**
 * `text` when it has at most `maxChars` UTF-16 units, else its start and its end around an
 * ellipsis, `maxChars` units in all at most: both ends matter (a path's end names the failing
 * key, a message's end says what failed). A character made of two units is never split.
 */
export function shorten (text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  const kept = maxChars - ELLIPSIS.length
  let head = Math.ceil(kept / 2)
  let tail = text.length - (kept - head)
  if (isHighSurrogate(text.charCodeAt(head - 1))) head--
  if (isLowSurrogate(text.charCodeAt(tail))) tail++
  return `${text.slice(0, head)}${ELLIPSIS}${text.slice(tail)}`
}

/**
 * The one error body of the service: `{ statusCode, error, message, code }`,
 * with `error` the HTTP reason phrase, plus `validation` for a failed validation.
 * The message is shortened to MAX_MESSAGE_CHARS, so no error body grows with the request.
 */
export function errorBody ({ statusCode, code, message }: ErrorFacts, validation?: ValidationIssue[]): ErrorReply {
  const body: ErrorReply = { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message: shorten(message, MAX_MESSAGE_CHARS), code }
  if (validation !== undefined) body.validation = validation
  return body
}
