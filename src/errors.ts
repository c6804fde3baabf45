import createError from '@fastify/error'

/**
 * Every error the service sends, created once with its stable `code` and HTTP
 * status (the README lists them). Clients branch on `code`. A 5xx defined here
 * is a condition the client should know about, so its message is sent; any
 * other 5xx is answered with a generic message.
 */

const statusByCode = new Map<string, number>()
const retryAfterByCode = new Map<string, number>()

/** An error class of the service; `Args` fill the message's `%s` placeholders, or give the cause. */
export type ServiceErrorClass<Args extends unknown[]> = createError.FastifyErrorConstructor<{ code: string, statusCode: number }, Args>
export type ServiceError = InstanceType<ServiceErrorClass<unknown[]>>

function define<Args extends unknown[] = [options?: { cause: unknown }]> (
  code: string, message: string, statusCode: number, retryAfterSeconds?: number
): ServiceErrorClass<Args> {
  statusByCode.set(code, statusCode)
  if (retryAfterSeconds !== undefined) retryAfterByCode.set(code, retryAfterSeconds)
  return createError<string, number, Args>(code, message, statusCode)
}

/** Whether an error with this code and status is one defined here (its message is meant for the client). */
export const isServiceError = (code: string, statusCode: number): boolean => statusByCode.get(code) === statusCode

/** How long a client should wait before retrying after an error with this code (Retry-After), if it should. */
export const retryAfterFor = (code: string): number | undefined => retryAfterByCode.get(code)

// Requests. Validation keeps Fastify's code, so a client handles schema and merge-safety failures alike.
export const InvalidRequest = define<[message: string]>('FST_ERR_VALIDATION', '%s', 400)
export const RouteNotFound = define<[method: string, url: string]>('HTTP_ERR_ROUTE_NOT_FOUND', 'Route %s %s not found', 404)
// A path the service serves, with a method it does not serve there: the answer's Allow lists those it does.
export const MethodNotAllowed = define<[method: string, path: string]>('HTTP_ERR_METHOD_NOT_ALLOWED', 'Method %s is not allowed on %s; see Allow', 405)
export const ClientTimeout = define('HTTP_ERR_CLIENT_TIMEOUT', 'The request took too long to arrive', 408)
export const HeadersTooLarge = define('HTTP_ERR_HEADERS_TOO_LARGE', 'The request headers are too large', 431)
// A 429 raised without a code of its own: a host's rate limit (e.g. @fastify/rate-limit) on the service's routes.
export const TooManyRequests = define('HTTP_ERR_TOO_MANY_REQUESTS', 'Too many requests; retry later', 429)
export const MalformedRequest = define('HTTP_ERR_MALFORMED_REQUEST', 'The request is not valid HTTP', 400)
export const Overloaded = define('HTTP_ERR_OVERLOADED', 'The server is overloaded; retry shortly', 503, 10)
export const InternalError = define('HTTP_ERR_INTERNAL', 'An internal error occurred', 500)

// Accounts and tokens
export const InvalidCredentials = define('AUTH_ERR_INVALID_CREDENTIALS', 'Invalid username or password', 401)
export const MissingToken = define('AUTH_ERR_MISSING_TOKEN', 'Missing bearer token', 401)
export const InvalidToken = define('AUTH_ERR_INVALID_TOKEN', 'Invalid or expired access token', 401)
export const TooManyLoginAttempts = define<[retryAfterSeconds: number]>('AUTH_ERR_TOO_MANY_ATTEMPTS', 'Too many login attempts; retry in %s seconds', 429)
export const LoginLimiterUnavailable = define('AUTH_ERR_LIMITER_UNAVAILABLE', 'Login is unavailable: the rate limit store cannot be reached', 503, 5)
export const TooManyLoginsInProgress = define('AUTH_ERR_LOGINS_IN_PROGRESS', 'Too many logins in progress; retry shortly', 503, 1)
export const LoginWaitedTooLong = define('AUTH_ERR_LOGIN_WAITED_TOO_LONG', 'The login waited too long for its turn; retry shortly', 503, 1)
// 499 (client closed request): the client is gone, so nobody reads this; it keeps the log free of errors.
export const LoginAbandoned = define('AUTH_ERR_LOGIN_ABANDONED', 'The client closed the connection before the login was checked', 499)
export const InvalidRefreshToken = define('AUTH_ERR_INVALID_REFRESH_TOKEN', 'Invalid, expired or already used refresh token', 401)
export const TooManyRefreshes = define<[retryAfterSeconds: number]>('AUTH_ERR_TOO_MANY_REFRESHES', 'This session refreshes too often; retry in %s seconds', 429)
export const AccountsUnavailable = define('AUTH_ERR_ACCOUNTS_UNAVAILABLE', 'The accounts cannot be read now; retry shortly', 503, 5)
export const SessionNotFound = define('AUTH_ERR_SESSION_NOT_FOUND', 'No live session of yours has this id', 404)
export const SessionStoreUnavailable = define('AUTH_ERR_SESSION_STORE_UNAVAILABLE', 'Sessions are unavailable: the session store cannot be reached; retry shortly', 503, 5)

// Cats
export const CollectionFull = define<[maxCats: number]>('CATS_ERR_COLLECTION_FULL', 'The collection is full (%s cats); delete some first', 507)
export const CatTooLarge = define<[maxCatBytes: number]>('CATS_ERR_CAT_TOO_LARGE', 'The merged cat would be larger than %s bytes', 413)
export const LowMemory = define('CATS_ERR_LOW_MEMORY', 'The server is low on memory; delete some cats first', 507)
export const IdempotencyKeyInUse = define('CATS_ERR_IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still in progress; retry shortly', 409, 1)
export const IdempotencyKeyReused = define('CATS_ERR_IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body', 422)
export const StoreUnavailable = define('CATS_ERR_STORE_UNAVAILABLE', 'The database is unavailable; retry shortly', 503, 5)
export const PreconditionFailed = define('CATS_ERR_PRECONDITION_FAILED', 'The cat does not meet the request\'s If-Match or If-None-Match: it has changed, or no cat has this id; read it again', 412)
export const PreconditionRequired = define('CATS_ERR_PRECONDITION_REQUIRED', 'Writes need If-Match with the cat\'s ETag: read the cat first', 428)
export const TooManyLists = define('CATS_ERR_TOO_MANY_LISTS', 'Too many lists are being streamed; retry shortly, or read smaller pages with limit', 503, 2)
