import { STATUS_CODES } from 'node:http'
import type { ErrorReply, ValidationIssue } from './schemas.js'

/** What an error body is made of: the status, the stable code and a message meant for the client. */
export interface ErrorFacts {
  statusCode: number
  code: string
  message: string
}

/**
 * The one error body of the service: `{ statusCode, error, message, code }`,
 * with `error` the HTTP reason phrase, plus `validation` for a failed validation.
 */
export function errorBody ({ statusCode, code, message }: ErrorFacts, validation?: ValidationIssue[]): ErrorReply {
  const body: ErrorReply = { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message, code }
  if (validation !== undefined) body.validation = validation
  return body
}
