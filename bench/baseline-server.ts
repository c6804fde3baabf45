/**
 * The reference point of the benchmark: the service's routes and semantics on plain node:http + fast-jwt (HS256) +
 * JSON.stringify, no framework. It reuses the service's domain modules (cats repository, users and password hashing,
 * merge safety, the claims schema and age rule, the logout denylist) and does the same work per response (security
 * headers, the request-id rule), so that only the HTTP layer differs from the real service.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { Registry } from 'prom-client'
import { createSigner, createVerifier } from 'fast-jwt'
import { HashQueue } from '../src/auth/login/hash-queue.js'
import { PasswordWorkers } from '../src/auth/login/password-workers.js'
import { MemoryCatsStore } from '../src/cats/memory-cats-store.js'
import type { VersionedCat } from '../src/cats/cats-store.js'
import { DEMO_USERS } from '../src/auth/login/demo-users.js'
import { findMergeProblems } from '../src/cats/merge-safety.js'
import { TEXT_CONTENT_TYPE } from '../src/cats/schemas.js'
import { UserStore } from '../src/auth/login/users.js'
import type { VerifiedClaims } from '../src/auth/schemas.js'
import type { Verified } from '../src/auth/tokens/token-guard.js'
import { hasAllowedAge } from '../src/auth/tokens/token-claims.js'
import { tokenKeys } from '../src/auth/tokens/token-keys.js'
import { bearerToken } from '../src/auth/tokens/bearer-token.js'
import { MemoryDenylist } from '../src/auth/sessions/denylist.js'
import { errorBody } from '../src/http/error-body.js'
import { toIssues } from '../src/http/validation-issues.js'
import { PROBLEM_JSON, prefersProblemDetails, problemDetails } from '../src/http/problem-details.js'
import type { ValidationIssue } from '../src/http/error-schemas.js'
import { ServiceMetrics, UNMATCHED_ROUTE } from '../src/metrics/service-metrics.js'
import { SECURITY_HEADERS } from '../src/http/security-headers.js'
import { connectionSettings, requestId } from '../src/http/server-options.js'
import type { Config } from '../src/config.js'
import {
  BodyTooLarge, CollectionFull, InvalidCredentials, InvalidJsonBody, InvalidToken, MethodNotAllowed, MissingToken, retryAfterFor, RouteNotFound,
  TooManyLoginsInProgress, UnsupportedMediaType, type ErrorInstance
} from '../src/errors.js'
import { LOGIN_CHALLENGE } from '../src/http/error-handler.js'
import { RouteMethods } from '../src/http/route-methods.js'

type JsonObject = Record<string, unknown>

const JSON_TYPE = 'application/json; charset=utf-8'
const JSON_MEDIA = /^application\/json\s*(;|$)/i
const ID_PATTERN = /^-?[0-9]{1,15}$/

/** A token or session id as the service's claims schema allows it. */
function isRandomId (value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= 64
}

/** What the service's claims schema (VerifiedClaims) allows, checked by hand: no validator, as in a framework-free server. */
function isVerifiedClaims (claims: JsonObject): claims is VerifiedClaims {
  const { sub, username, jti, sid, iat, exp } = claims
  return ((typeof sub === 'number' && Number.isInteger(sub)) || (typeof sub === 'string' && sub.length > 0)) &&
    typeof username === 'string' && username.length > 0 && isRandomId(jti) && isRandomId(sid) && Number.isInteger(iat) && Number.isInteger(exp)
}

function isObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Every response's headers: the security headers, the request id (the client's UUID or a new one), and `headers`. */
function responseHeaders (res: ServerResponse, headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  return { ...SECURITY_HEADERS, 'x-request-id': requestId(res.req), ...headers }
}

/** A JSON payload, already serialized, with the headers of every response. */
function sendJson (res: ServerResponse, status: number, payload: string): void {
  res.writeHead(status, responseHeaders(res, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(payload) }))
  res.end(payload)
}

/** A cat with its ETag; when no cat has the id, 200 with an empty text/plain body, as the service answers. */
function sendCat (res: ServerResponse, cat: VersionedCat | undefined): void {
  if (cat !== undefined) {
    res.setHeader('etag', `"${cat.version}"`)
    return sendJson(res, 200, cat.json)
  }
  res.writeHead(200, responseHeaders(res, { 'content-type': TEXT_CONTENT_TYPE, 'content-length': 0 }))
  res.end()
}

/**
 * An error as the service sends it: with its Retry-After, if it has one, and as Problem Details when the client
 * prefers them, with Vary: Accept. `validation`: a 400's issues.
 */
function sendError (res: ServerResponse, error: ErrorInstance, headers: Record<string, string> = {}, validation?: ValidationIssue[]): void {
  const retryAfter = retryAfterFor(error.code)
  const withRetry = retryAfter === undefined ? headers : { ...headers, 'retry-after': String(retryAfter) }
  const body = errorBody(error, validation)
  const problem = prefersProblemDetails(res.req.headers.accept)
  const payload = JSON.stringify(problem ? problemDetails(body, String(res.req.url)) : body)
  res.writeHead(body.statusCode, responseHeaders(res, {
    ...withRetry, vary: 'Accept', 'content-type': problem ? PROBLEM_JSON : JSON_TYPE, 'content-length': Buffer.byteLength(payload)
  }))
  res.end(payload)
}

function sendInvalid (res: ServerResponse, issues: ValidationIssue[]): void {
  const message = issues.map((issue) => `${issue.field} ${issue.message}`).join(', ')
  sendError(res, { statusCode: 400, code: 'FST_ERR_VALIDATION', message }, {}, issues)
}

/** The methods of the service's paths that the baseline serves, for the service's 405 with Allow. */
const ROUTES = new RouteMethods()
for (const [url, methods] of Object.entries({
  '/profile': ['GET', 'HEAD'], '/auth/login': ['POST'], '/auth/logout': ['POST'], '/cats': ['GET', 'HEAD', 'POST'], '/cats/:id': ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE']
})) ROUTES.add({ method: methods, url, prefix: '' })

function notFound (req: IncomingMessage, res: ServerResponse): void {
  const path = pathOf(req)
  const allowed = ROUTES.allowed(path)
  if (allowed !== undefined) return sendError(res, new MethodNotAllowed(String(req.method), path), { allow: allowed.join(', ') })
  sendError(res, new RouteNotFound(String(req.method), String(req.url)))
}

/** Reads a JSON body within the limit, then calls `next`; 415, 413 or 400 otherwise. */
function readJson (req: IncomingMessage, res: ServerResponse, limit: number, next: (res: ServerResponse, body: unknown) => void): void {
  if (!JSON_MEDIA.test(String(req.headers['content-type']))) return sendError(res, UnsupportedMediaType)
  const chunks: Buffer[] = []
  let size = 0
  req.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size <= limit) chunks.push(chunk)
  })
  req.on('end', () => {
    if (size > limit) return sendError(res, BodyTooLarge)
    let body: unknown
    try {
      body = JSON.parse(Buffer.concat(chunks, size).toString('utf8'))
    } catch {
      return sendError(res, InvalidJsonBody)
    }
    next(res, body)
  })
}

/** Reasons a field fails its type, in the service's wording. */
function fieldIssues (body: JsonObject, checks: Array<[key: string, ok: boolean, type: string]>): ValidationIssue[] {
  return checks.filter(([, ok]) => !ok).map(([key, , type]) => ({
    field: `body.${key}`,
    message: key in body ? `must be ${type}` : `must have required property '${key}'`
  }))
}

const NOT_AN_OBJECT: ValidationIssue[] = [{ field: 'body', message: 'must be object' }]

const busy = (): Error => new Error('busy')

/** The request's path: its URL without the query string. */
const pathOf = (req: IncomingMessage): string => String(req.url).split('?', 1)[0]

/** The route pattern the service labels a response with: its route's, or one label for every request no route matched. */
function routeLabel (req: IncomingMessage, status: number): string {
  if (status === 404 || status === 405) return UNMATCHED_ROUTE
  const path = pathOf(req)
  return path.startsWith('/cats/') ? '/cats/:id' : path
}

/** Observes the response's duration when it has been sent, as the service's onResponse hook does. */
function observeWhenSent (metrics: ServiceMetrics, req: IncomingMessage, res: ServerResponse): void {
  const end = metrics.requestDuration.startTimer()
  res.once('finish', () => end({ method: String(req.method), route: routeLabel(req, res.statusCode), status_code: res.statusCode }))
}

/**
 * The baseline with the service's settings (HS256 only: baseline-main.ts checks it): its secret, token lifetime,
 * limits, timeouts and header limit. `metrics`: every response observed on it, as by the service with metrics on.
 */
export function createBaselineServer (config: Config, metrics?: Registry): Server {
  const settings = connectionSettings(config)
  const cats = new MemoryCatsStore()
  const serviceMetrics = metrics === undefined ? undefined : new ServiceMetrics(metrics, { countCats: () => cats.size })
  const server = createServer(settings.http, (req, res) => {
    if (serviceMetrics !== undefined) observeWhenSent(serviceMetrics, req, res)
    route(req, res)
  })
  // As Fastify's createServer does with the same options.
  server.keepAliveTimeout = settings.keepAliveTimeout
  server.requestTimeout = settings.requestTimeout
  server.setTimeout(settings.connectionTimeout)
  const expiresIn = config.durations.accessTokenSeconds
  const hashQueue = new HashQueue(config.HASH_CONCURRENCY, config.HASH_QUEUE_MAX, 3000, { whenFull: busy, whenLate: busy, whenAbandoned: busy })
  const passwords = new PasswordWorkers(config.HASH_CONCURRENCY)
  server.on('close', () => passwords.close())
  const users = new UserStore(DEMO_USERS, hashQueue, passwords.derive)
  const secret = tokenKeys(config).signingKey
  const sign = createSigner({ key: secret, algorithm: 'HS256', expiresIn: expiresIn * 1000 })
  const verify: (token: string) => JsonObject = createVerifier({
    key: secret,
    algorithms: ['HS256'],
    requiredClaims: ['exp', 'iat', 'sub', 'username']
  })
  // Its sweeper timer is unref'd: nothing to close when the server stops.
  const denylist = new MemoryDenylist()

  /** The guard's checks: a valid signature, claims of the service's schema and an allowed age, not denied, of a user who still exists under that name. */
  function verifyToken (token: string): Verified | undefined {
    let claims: JsonObject
    try {
      claims = verify(token)
    } catch {
      return undefined // Not a JWT, another key's signature, expired.
    }
    if (!isVerifiedClaims(claims) || !hasAllowedAge(claims, expiresIn, Math.floor(Date.now() / 1000))) return undefined
    if (denylist.isRevoked(claims.jti, claims.sid)) return undefined
    const user = users.findById(claims.sub)
    if (user === undefined || user.username !== claims.username) return undefined
    return { claims, identity: { userId: user.id, username: user.username } }
  }

  /** The guard: the request's verified claims and identity, or undefined after answering 401. */
  function authenticate (req: IncomingMessage, res: ServerResponse): Verified | undefined {
    const token = bearerToken(req.headers.authorization)
    const verified = token === undefined ? undefined : verifyToken(token)
    if (verified === undefined) {
      sendError(res, token === undefined ? new MissingToken() : new InvalidToken(), {
        'www-authenticate': token === undefined ? 'Bearer' : 'Bearer error="invalid_token"'
      })
    }
    return verified
  }

  function profile (req: IncomingMessage, res: ServerResponse): void {
    const verified = authenticate(req, res)
    if (verified !== undefined) sendJson(res, 200, JSON.stringify(verified.identity))
  }

  /** Logout without refresh tokens: the token's id is denied until it expires. */
  function logout (req: IncomingMessage, res: ServerResponse): void {
    const verified = authenticate(req, res)
    if (verified === undefined) return
    // eslint-disable-next-line no-void -- the memory denylist records the id at once; its promise cannot reject
    void denylist.revoke(verified.claims.jti, verified.claims.exp * 1000).then(() => {
      res.writeHead(204, responseHeaders(res, {}))
      res.end()
    })
  }

  function login (res: ServerResponse, body: unknown): void {
    if (!isObject(body)) return sendInvalid(res, NOT_AN_OBJECT)
    const { username, password } = body
    if (typeof username !== 'string' || typeof password !== 'string' ||
      username.length === 0 || username.length > 128 || password.length === 0 || password.length > 1024) {
      return sendInvalid(res, [{ field: 'body', message: 'must have a username (1-128) and a password (1-1024)' }])
    }
    users.verifyCredentials(username, password).then((user) => {
      if (user === undefined) return sendError(res, new InvalidCredentials(), { 'www-authenticate': LOGIN_CHALLENGE })
      const token = sign({ sub: user.id, username: user.username, jti: randomUUID(), sid: randomUUID() })
      sendJson(res, 200, JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: expiresIn }))
    }, () => {
      sendError(res, new TooManyLoginsInProgress())
    })
  }

  function createCat (res: ServerResponse, body: unknown): void {
    if (!isObject(body)) return sendInvalid(res, NOT_AN_OBJECT)
    const { name, age, breed } = body
    if (typeof name !== 'string' || typeof age !== 'number' || !Number.isInteger(age) || typeof breed !== 'string') {
      return sendInvalid(res, fieldIssues(body, [
        ['name', typeof name === 'string', 'string'],
        ['age', Number.isInteger(age), 'integer'],
        ['breed', typeof breed === 'string', 'string']
      ]))
    }
    if (cats.size >= config.CATS_MAX) return sendError(res, new CollectionFull(config.CATS_MAX))
    sendJson(res, 201, cats.createJson({ name, age, breed }))
  }

  function updateCat (res: ServerResponse, id: number, body: unknown): void {
    if (!isObject(body)) return sendInvalid(res, NOT_AN_OBJECT)
    const problems = findMergeProblems(body)
    if (problems.length > 0) return sendInvalid(res, toIssues('body', problems))
    sendCat(res, cats.update(id, body))
  }

  function oneCat (req: IncomingMessage, res: ServerResponse, rawId: string): void {
    const method = req.method
    if (method !== 'GET' && method !== 'PUT' && method !== 'DELETE') return notFound(req, res)
    if (!ID_PATTERN.test(rawId)) return sendInvalid(res, [{ field: 'params.id', message: `must match pattern "${ID_PATTERN.source}"` }])
    const id = Number(rawId)
    if (method === 'PUT') return readJson(req, res, config.BODY_LIMIT, (res, body) => updateCat(res, id, body))
    if (method === 'DELETE') {
      cats.remove(id)
      return sendJson(res, 200, JSON.stringify({ deleted: true }))
    }
    sendCat(res, cats.find(id))
  }

  function route (req: IncomingMessage, res: ServerResponse): void {
    const path = pathOf(req)
    const method = req.method
    if (path === '/profile' && method === 'GET') return profile(req, res)
    if (path === '/auth/login' && method === 'POST') return readJson(req, res, config.BODY_LIMIT, login)
    if (path === '/auth/logout' && method === 'POST') return logout(req, res)
    if (path === '/cats') {
      if (method === 'GET') {
        res.setHeader('etag', `W/"${cats.listVersion()}"`)
        return sendJson(res, 200, `[${cats.page(0, Number.MAX_SAFE_INTEGER).items}]`)
      }
      if (method === 'POST') return readJson(req, res, config.BODY_LIMIT, createCat)
    } else if (path.startsWith('/cats/')) {
      return oneCat(req, res, path.slice('/cats/'.length))
    }
    notFound(req, res)
  }

  return server
}
