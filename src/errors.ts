import createError from '@fastify/error'
import { errorCodes } from 'fastify'

/**
 * Every error code the service answers with, written once: its HTTP status, message and when it happens. The
 * service's own errors are classes created here; Fastify's, which the service passes on with Fastify's code, are
 * listed beside them. The routes' documented error responses (src/http/error-response-schemas.ts) and the table
 * of docs/errors.md (`npm run errors`; a test fails when it is stale) are built from this list. Clients branch on
 * `code`. A 5xx defined here is a condition the client should know about, so its message is sent; any other 5xx is
 * answered with a generic message.
 */

/** One error code, as the docs describe it. */
export interface ErrorEntry {
  code: string
  statusCode: number
  /** The message sent; `%s` is filled in per case. */
  message: string
  /** When it happens (Markdown): the docs' table and the OpenAPI document show it. */
  when: string
  /** Retry-After, in seconds, when the client should retry after that long. */
  retryAfterSeconds?: number
}

const registry = new Map<string, ErrorEntry>()
/** The status of each of the service's own error codes (not Fastify's, whose messages are not the service's). */
const ownStatus = new Map<string, number>()

/** Every error code the service answers with, in the order the docs list them. */
export const errorEntries = (): ErrorEntry[] => [...written]

/** The entry of a code, for the docs of one response; throws for a code not written here. */
export function errorEntry (code: string): ErrorEntry {
  const entry = registry.get(code)
  if (entry === undefined) throw new Error(`${code} is not in src/errors.ts`)
  return entry
}

/** An error class of the service; `Args` fill the message's `%s` placeholders, or give the cause. */
export type ServiceErrorClass<Args extends unknown[]> = createError.FastifyErrorConstructor<{ code: string, statusCode: number }, Args>
export type ServiceError = InstanceType<ServiceErrorClass<unknown[]>>

// Listed as written, so that a test sees a code written twice (the map keeps only the last).
const written: ErrorEntry[] = []

function register (entry: ErrorEntry): void {
  written.push(entry)
  registry.set(entry.code, entry)
}

function define<Args extends unknown[] = [options?: { cause: unknown }]> (
  code: string, message: string, statusCode: number, when: string, retryAfterSeconds?: number
): ServiceErrorClass<Args> {
  register({ code, statusCode, message, when, ...(retryAfterSeconds !== undefined && { retryAfterSeconds }) })
  ownStatus.set(code, statusCode)
  return createError<string, number, Args>(code, message, statusCode)
}

type FastifyCode = 'FST_ERR_CTP_INVALID_JSON_BODY' | 'FST_ERR_CTP_EMPTY_JSON_BODY' | 'FST_ERR_CTP_BODY_TOO_LARGE' |
  'FST_ERR_CTP_INVALID_MEDIA_TYPE' | 'FST_ERR_MAX_PARAM_LENGTH' | 'FST_ERR_BAD_URL'

/** An example of an error as a client receives it. */
export interface ErrorInstance { code: string, statusCode: number, message: string }

/** An error Fastify raises and the service answers with as it is: an example of it, its message's `%s` filled by `example`. */
function fastifys (code: FastifyCode, when: string, ...example: string[]): ErrorInstance {
  const error = new errorCodes[code](...example)
  const instance = { code, statusCode: Number(error.statusCode), message: error.message }
  register({ ...instance, when })
  return instance
}

/** Whether an error with this code and status is one of the service's own (its message is meant for the client). */
export const isServiceError = (code: string, statusCode: number): boolean => ownStatus.get(code) === statusCode

/** How long a client should wait before retrying after an error with this code (Retry-After), if it should. */
export const retryAfterFor = (code: string): number | undefined => registry.get(code)?.retryAfterSeconds

// Requests. Validation keeps Fastify's code, so a client handles schema and merge-safety failures alike.
export const InvalidRequest = define<[message: string]>('FST_ERR_VALIDATION', '%s', 400,
  'The request does not match the route\'s schema, a PUT or PATCH body has a reserved key or nests too deep, or a PATCH ' +
  'removes `name`, `age` or `breed`; `validation` lists the failing fields (the first 10)')
export const InvalidJsonBody = fastifys('FST_ERR_CTP_INVALID_JSON_BODY', 'The body is not JSON')
export const EmptyJsonBody = fastifys('FST_ERR_CTP_EMPTY_JSON_BODY', 'The body is empty with a JSON content type')
export const BodyTooLarge = fastifys('FST_ERR_CTP_BODY_TOO_LARGE', 'The body is over `BODY_LIMIT`')
export const UnsupportedMediaType = fastifys('FST_ERR_CTP_INVALID_MEDIA_TYPE',
  'The body is not `application/json` (`application/merge-patch+json` for `PATCH`)')
export const MalformedRequest = define('HTTP_ERR_MALFORMED_REQUEST', 'The request is not valid HTTP', 400,
  'The request is not valid HTTP (the connection then closes)')
// A 4xx raised without a code of its own (not by Fastify, which names all of its errors): its message is kept.
export const BadRequest = define<[message: string]>('HTTP_ERR_BAD_REQUEST', '%s', 400, 'Any other client error without a code of its own')
export const RouteNotFound = define<[method: string, url: string]>('HTTP_ERR_ROUTE_NOT_FOUND', 'Route %s %s not found', 404, 'No such route')
// A path the service serves, with a method it does not serve there: the answer's Allow lists those it does.
export const MethodNotAllowed = define<[method: string, path: string]>('HTTP_ERR_METHOD_NOT_ALLOWED', 'Method %s is not allowed on %s; see Allow', 405,
  'A path the service serves, with a method it does not serve there; `Allow` lists those it does (see ' +
  '[Methods a path does not serve](api.md#methods-a-path-does-not-serve))')
const STANDALONE_ROUTER = '(standalone server; embedded, the host\'s router answers these)'
export const ParameterTooLong = fastifys('FST_ERR_MAX_PARAM_LENGTH', `A path parameter over 100 characters ${STANDALONE_ROUTER}`, 'id')
export const MalformedUrl = fastifys('FST_ERR_BAD_URL', `A path parameter with a malformed \`%\` escape ${STANDALONE_ROUTER}`, 'id')
// A 429 raised without a code of its own: a host's rate limit (e.g. @fastify/rate-limit) on the service's routes.
export const TooManyRequests = define('HTTP_ERR_TOO_MANY_REQUESTS', 'Too many requests; retry later', 429,
  'A host\'s rate limit refused the request (embedded, e.g. `@fastify/rate-limit` at the host\'s root; see ' +
  '[What the host\'s plugins do to the service](embedding.md#what-the-hosts-plugins-do-to-the-service)); with the limit\'s `Retry-After`')
export const ClientTimeout = define('HTTP_ERR_CLIENT_TIMEOUT', 'The request took too long to arrive', 408,
  'The request did not arrive within `REQUEST_TIMEOUT_MS`')
export const HeadersTooLarge = define('HTTP_ERR_HEADERS_TOO_LARGE', 'The request headers are too large', 431,
  'The request headers are over `MAX_HEADER_BYTES`')
export const Overloaded = define('HTTP_ERR_OVERLOADED', 'The server is overloaded; retry shortly', 503,
  'The server sheds load (event loop delay or heap over the limits); with `Retry-After`', 10)
export const InternalError = define('HTTP_ERR_INTERNAL', 'An internal error occurred', 500,
  'An unexpected failure; the message says only that, the log has the details')

// Accounts and tokens
export const InvalidCredentials = define('AUTH_ERR_INVALID_CREDENTIALS', 'Invalid username or password', 401,
  'Wrong username or password (the two are not told apart; `WWW-Authenticate: Login realm="cats-auth-service"`)')
export const MissingToken = define('AUTH_ERR_MISSING_TOKEN', 'Missing bearer token', 401,
  'No bearer token on a guarded route (`WWW-Authenticate: Bearer`)')
export const InvalidToken = define('AUTH_ERR_INVALID_TOKEN', 'Invalid or expired access token', 401,
  'A bearer token that is malformed, forged, expired, logged out or whose user is gone (`WWW-Authenticate: Bearer error="invalid_token"`)')
export const TooManyRefreshes = define<[retryAfterSeconds: number]>('AUTH_ERR_TOO_MANY_REFRESHES', 'This session refreshes too often; retry in %s seconds', 429,
  'One session refreshed more than `REFRESH_RATE_LIMIT` times in a minute; see `Retry-After`')
export const InvalidRefreshToken = define('AUTH_ERR_INVALID_REFRESH_TOKEN', 'Invalid, expired or already used refresh token', 401,
  'A refresh token that is unknown, malformed, expired, already used (which also ends its session), or whose user is gone ' +
  '(`WWW-Authenticate: Login realm="cats-auth-service"`)')
export const SessionNotFound = define('AUTH_ERR_SESSION_NOT_FOUND', 'No live session of yours has this id', 404,
  '`DELETE /auth/sessions/{id}` with an id that is not a live session of the caller (another user\'s, ended, or unknown)')
export const AccountsUnavailable = define('AUTH_ERR_ACCOUNTS_UNAVAILABLE', 'The accounts cannot be read now; retry shortly', 503,
  'The host\'s account lookup (`users` as a `UserDirectory`) threw or rejected, at login, refresh or a guarded request; with `Retry-After`', 5)
export const SessionStoreUnavailable = define('AUTH_ERR_SESSION_STORE_UNAVAILABLE', 'Sessions are unavailable: the session store cannot be reached; retry shortly', 503,
  'The session store (the session records or the denylist of logged-out tokens: the database or Redis) cannot be reached, ' +
  'or fewer replicas than `REDIS_WAIT_REPLICAS` acknowledged an end; with `Retry-After`', 5)
export const TooManyLoginAttempts = define<[retryAfterSeconds: number]>('AUTH_ERR_TOO_MANY_ATTEMPTS', 'Too many login attempts; retry in %s seconds', 429,
  'Too many failed logins for this username from this client address, or from this address overall (see ' +
  '[Login protection](sessions.md#login-protection)); with `Retry-After`')
export const LoginWaitedTooLong = define('AUTH_ERR_LOGIN_WAITED_TOO_LONG', 'The login waited too long for its turn; retry shortly', 503,
  'The login waited `HASH_QUEUE_WAIT_MS` for a password hash without its turn; with `Retry-After`', 1)
// 499 (client closed request): the client is gone, so nobody reads this; it keeps the log free of errors.
export const LoginAbandoned = define('AUTH_ERR_LOGIN_ABANDONED', 'The client closed the connection before the login was checked', 499,
  'The client closed the connection before its login was checked, so the password was not hashed (logged only; nobody receives it)')
export const LoginLimiterUnavailable = define('AUTH_ERR_LIMITER_UNAVAILABLE', 'Login is unavailable: the rate limit store cannot be reached', 503,
  'The failed-login counters\' store (Redis) cannot be reached; with `Retry-After`', 5)
export const TooManyLoginsInProgress = define('AUTH_ERR_LOGINS_IN_PROGRESS', 'Too many logins in progress; retry shortly', 503,
  'The password-hash queue is full, or the logins of this username and address already in progress hold every slot for 2 s, ' +
  'or `LOGIN_SLOT_QUEUE_MAX` logins wait for a slot already; with `Retry-After`', 1)

// Cats
export const CatTooLarge = define<[maxCatBytes: number]>('CATS_ERR_CAT_TOO_LARGE', 'The merged cat would be larger than %s bytes', 413,
  'A merge would make the cat larger than `BODY_LIMIT`')
export const CollectionFull = define<[maxCats: number]>('CATS_ERR_COLLECTION_FULL', 'The collection is full (%s cats); delete some first', 507,
  'The collection holds `CATS_MAX` cats')
export const IdempotencyKeyInUse = define('CATS_ERR_IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still in progress; retry shortly', 409,
  'A create with this `Idempotency-Key` is still in progress; with `Retry-After`', 1)
export const IdempotencyKeyReused = define('CATS_ERR_IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body', 422,
  'This `Idempotency-Key` was used with a different body within 24 h')
export const LowMemory = define('CATS_ERR_LOW_MEMORY', 'The server is low on memory; delete some cats first', 507,
  'The heap is above `WRITE_HEAP_RATIO` of its limit (creates and updates only)')
export const PreconditionFailed = define('CATS_ERR_PRECONDITION_FAILED', 'The cat does not meet the request\'s If-Match or If-None-Match: it has changed, or no cat has this id; read it again', 412,
  '`If-Match` names no current `ETag` of the cat, or no cat has the id; nothing changed')
export const PreconditionRequired = define('CATS_ERR_PRECONDITION_REQUIRED', 'Writes need If-Match with the cat\'s ETag: read the cat first', 428,
  '`CATS_IF_MATCH=required` and a `PUT`, `PATCH` or `DELETE` came without `If-Match`')
export const StoreUnavailable = define('CATS_ERR_STORE_UNAVAILABLE', 'The database is unavailable; retry shortly', 503,
  'The database cannot be reached or failed; with `Retry-After`', 5)
export const TooManyLists = define('CATS_ERR_TOO_MANY_LISTS', 'Too many lists are being streamed; retry shortly, or read smaller pages with limit', 503,
  '`LIST_STREAMS_MAX` lists (`GET /cats`, whole or a page larger than one chunk) are being streamed already; with `Retry-After`', 2)
