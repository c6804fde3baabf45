import { errorResponse, type ErrorExample, type ErrorReply } from './schemas.js'
import {
  AccountsUnavailable, InvalidRefreshToken, SessionNotFound, SessionStoreUnavailable, CatTooLarge, CollectionFull, IdempotencyKeyInUse, IdempotencyKeyReused, InvalidCredentials, LoginWaitedTooLong, InvalidRequest, InvalidToken, LoginLimiterUnavailable, LowMemory,
  MissingToken, Overloaded, PreconditionFailed, PreconditionRequired, StoreUnavailable, TooManyLists, TooManyLoginAttempts, TooManyLoginsInProgress, TooManyRefreshes, type ServiceError
} from '../errors.js'

/**
 * The documented error responses routes share: each a description of when it
 * happens and an example built from the error the service throws, so the
 * example's status and code are the ones a client receives.
 */

const example = (error: ServiceError, validation?: ErrorReply['validation']): ErrorExample => ({ code: error.code, message: error.message, validation })
const examples = (...errors: ServiceError[]) => errors.map((error) => example(error))

const response = (statusCode: number, description: string, ...bodies: ErrorExample[]) =>
  errorResponse(statusCode, description, bodies)

export const badRequest = (description: string, field: string, message: string) =>
  response(400, description, example(new InvalidRequest(`${field} ${message}`), [{ field, message }]))

export const invalidCredentials = response(401, 'Wrong username or password (the two are not told apart)', ...examples(new InvalidCredentials()))

export const unauthorized = response(401, 'No bearer token, or one that is malformed, forged or expired', ...examples(new MissingToken(), new InvalidToken()))

export const bodyTooLarge = response(413, 'The body is over the size limit', {
  code: 'FST_ERR_CTP_BODY_TOO_LARGE', message: 'Request body is too large'
})

export const catTooLarge = response(413, 'The body, or the cat after the merge, is over the size limit', {
  code: 'FST_ERR_CTP_BODY_TOO_LARGE', message: 'Request body is too large'
}, example(new CatTooLarge(8192)))

export const unsupportedMediaType = response(415, 'The body is not application/json', {
  code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', message: 'Unsupported Media Type'
})

export const tooManyLoginAttempts = response(429, 'Too many login attempts from this address or for this username; see Retry-After',
  ...examples(new TooManyLoginAttempts(60)))

export const loginUnavailable = response(503, 'Login cannot be served now; retry after Retry-After seconds',
  ...examples(new LoginLimiterUnavailable(), new TooManyLoginsInProgress(), new LoginWaitedTooLong(), new AccountsUnavailable(), new Overloaded()))

export const overloaded = response(503, 'The server sheds load; retry after Retry-After seconds', ...examples(new Overloaded()))

export const storeUnavailable = response(503, 'The database is unreachable or the server is overloaded; retry after Retry-After seconds',
  ...examples(new StoreUnavailable(), new Overloaded()))

export const listUnavailable = response(503, 'The database is unreachable, the most lists are being sent already, or the server is overloaded; ' +
  'retry after Retry-After seconds', ...examples(new StoreUnavailable(), new TooManyLists(), new Overloaded()))

export const insufficientStorage = response(507, 'The collection is full, or the server is low on memory',
  ...examples(new CollectionFull(50000), new LowMemory()))

export const idempotencyKeyInUse = response(409, 'A request with this Idempotency-Key is still in progress; retry after Retry-After seconds',
  ...examples(new IdempotencyKeyInUse()))

export const idempotencyKeyReused = response(422, 'This Idempotency-Key was used with a different body', ...examples(new IdempotencyKeyReused()))

export const invalidRefreshToken = response(401, 'The refresh token is unknown, malformed, expired or already used (which ends its session)',
  ...examples(new InvalidRefreshToken()))

export const tooManyRefreshes = response(429, 'This session refreshed more often than its limit allows; see Retry-After',
  ...examples(new TooManyRefreshes(60)))

export const sessionNotFound = response(404, 'No live session of the caller has this id: another user\'s, an ended one and an unknown id alike',
  ...examples(new SessionNotFound()))

export const sessionsUnavailable = response(503, 'The session store cannot be reached, or the server is overloaded; retry after Retry-After seconds',
  ...examples(new SessionStoreUnavailable(), new AccountsUnavailable(), new Overloaded()))

export const preconditionFailed = response(412, 'If-Match names no current ETag of the cat (or no cat has this id), or If-None-Match names the current one: nothing changed',
  ...examples(new PreconditionFailed()))

export const preconditionRequired = response(428, 'The server requires If-Match on writes (CATS_IF_MATCH=required) and none was sent',
  ...examples(new PreconditionRequired()))
