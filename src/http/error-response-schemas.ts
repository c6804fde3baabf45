import { STATUS_CODES } from 'node:http'
import { ErrorReply, ProblemDetails, type ValidationIssue } from './error-schemas.js'
import { problemDetails } from './problem-details.js'
import { ref } from './schemas.js'
import {
  AccountsUnavailable, BodyTooLarge, CatTooLarge, CollectionFull, errorEntry, IdempotencyKeyInUse, IdempotencyKeyReused, InvalidCredentials,
  InvalidRefreshToken, InvalidRequest, InvalidToken, LoginLimiterUnavailable, LoginWaitedTooLong, LowMemory, MissingToken, Overloaded,
  PreconditionFailed, PreconditionRequired, SessionNotFound, SessionStoreUnavailable, StoreUnavailable, TooManyLists, TooManyLoginAttempts,
  TooManyLoginsInProgress, TooManyRefreshes, UnsupportedMediaType, type ErrorInstance
} from '../errors.js'

/** What an error response of one status documents: why it happens, and an example body with its code. */
export interface ErrorExample {
  code: string
  message: string
  validation?: ValidationIssue[]
}

/** What the Problem Details examples show as `instance`: each request has its own path there. */
const EXAMPLE_INSTANCE = '/path/of/the/request'

/**
 * The response schema of one error status: the shared error body with a real
 * description and examples of that status (never a 400 body under a 401),
 * in both of its media types.
 */
export function errorResponse (statusCode: number, description: string, examples: ErrorExample[]) {
  const error = String(STATUS_CODES[statusCode])
  const bodies = examples.map(({ code, message, validation }): ErrorReply =>
    validation === undefined ? { statusCode, error, message, code } : { statusCode, error, message, code, validation })
  return {
    description,
    content: {
      'application/json': {
        schema: ref(ErrorReply),
        examples: Object.fromEntries(bodies.map((body) => [body.code, { summary: body.message, value: body }]))
      },
      'application/problem+json': {
        schema: ref(ProblemDetails),
        examples: Object.fromEntries(bodies.map((body) => [body.code, { summary: body.message, value: problemDetails(body, EXAMPLE_INSTANCE) }]))
      }
    }
  }
}

/**
 * The documented error responses routes share, built from src/errors.ts: the description of a status says when each
 * of its codes happens, and its examples are the errors the service throws, so an example's status, code and message
 * are the ones a client receives.
 */

const example = (error: ErrorInstance, validation?: ErrorReply['validation']): ErrorExample => ({ code: error.code, message: error.message, validation })

/** A link of the docs' Markdown kept as its text: the document has no pages to link to. */
const plainWhen = (code: string): string => errorEntry(code).when.replace(/\[([^\]]+)\]\([^)]+\)/g, '$1')

/** The response of one status that answers with these errors (all of that status), each described by its `when`. */
function response (...errors: ErrorInstance[]) {
  const [{ statusCode }] = errors
  const description = errors.length === 1 ? plainWhen(errors[0].code) : errors.map(({ code }) => `\`${code}\`: ${plainWhen(code)}.`).join(' ')
  return errorResponse(statusCode, description, errors.map((error) => example(error)))
}

export const badRequest = (description: string, field: string, message: string) =>
  errorResponse(400, description, [example(new InvalidRequest(`${field} ${message}`), [{ field, message }])])

export const invalidCredentials = response(new InvalidCredentials())
export const unauthorized = response(new MissingToken(), new InvalidToken())
export const bodyTooLarge = response(BodyTooLarge)
export const catTooLarge = response(BodyTooLarge, new CatTooLarge(8192))
export const unsupportedMediaType = response(UnsupportedMediaType)
export const tooManyLoginAttempts = response(new TooManyLoginAttempts(60))
export const loginUnavailable = response(new LoginLimiterUnavailable(), new TooManyLoginsInProgress(), new LoginWaitedTooLong(), new AccountsUnavailable(), new Overloaded())
export const overloaded = response(new Overloaded())
export const storeUnavailable = response(new StoreUnavailable(), new Overloaded())
export const listUnavailable = response(new StoreUnavailable(), new TooManyLists(), new Overloaded())
export const insufficientStorage = response(new CollectionFull(50000), new LowMemory())
export const idempotencyKeyInUse = response(new IdempotencyKeyInUse())
export const idempotencyKeyReused = response(new IdempotencyKeyReused())
export const invalidRefreshToken = response(new InvalidRefreshToken())
export const tooManyRefreshes = response(new TooManyRefreshes(60))
export const sessionNotFound = response(new SessionNotFound())
export const sessionsUnavailable = response(new SessionStoreUnavailable(), new AccountsUnavailable(), new Overloaded())
export const preconditionFailed = response(new PreconditionFailed())
export const preconditionRequired = response(new PreconditionRequired())
