import { Buffer } from 'node:buffer'
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createSigner, createVerifier } from 'fast-jwt'
import { HashQueue } from '../src/auth/hash-queue.js'
import { MemoryCatsStore } from '../src/cats/memory-cats-store.js'
import { DEMO_USERS } from '../src/auth/demo-users.js'
import { findMergeProblems } from '../src/cats/merge-safety.js'
import { TEXT_CONTENT_TYPE } from '../src/cats/schemas.js'
import { UserStore } from '../src/auth/users.js'
import type { Identity } from '../src/auth/schemas.js'
import { errorBody } from '../src/http/error-body.js'
import {
  CollectionFull, InvalidCredentials, InvalidToken, MissingToken, retryAfterFor, RouteNotFound, TooManyLoginsInProgress, type ServiceError
} from '../src/http/errors.js'

/**
 * The reference point of the benchmark: the service's routes and semantics on
 * plain node:http + fast-jwt (HS256) + JSON.stringify, no framework. It reuses
 * the service's domain modules (cats repository, users and password hashing,
 * merge safety) so that only the HTTP layer differs from the real service.
 */
export interface BaselineOptions {
  /** The HS256 secret, the same JWT_SECRET the service is given. */
  jwtSecret: string
  /** Token lifetime in seconds (the service's JWT_EXPIRES_IN; default 3600). */
  expiresIn?: number
  /** CATS_MAX (default 100000). */
  catsMax?: number
  /** BODY_LIMIT in bytes (default 16384). */
  bodyLimit?: number
  /** HASH_CONCURRENCY (default 2). */
  hashConcurrency?: number
  /** HASH_QUEUE_MAX (default 100). */
  hashQueueMax?: number
}

interface Issue {
  field: string
  message: string | undefined
}

type JsonObject = Record<string, unknown>
type BodyHandler = (res: ServerResponse, body: unknown) => void

const JSON_TYPE = 'application/json; charset=utf-8'
const JSON_MEDIA = /^application\/json\s*(;|$)/i
const BEARER_PREFIX = /^bearer +/i
const ID_PATTERN = /^-?[0-9]{1,15}$/

function isObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function sendJson (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(value)
  res.writeHead(status, { ...headers, 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(payload) })
  res.end(payload)
}

/** No cat has the id: 200 with an empty text/plain body, as the service answers. */
function sendEmpty (res: ServerResponse): void {
  res.writeHead(200, { 'content-type': TEXT_CONTENT_TYPE, 'content-length': 0 })
  res.end()
}

function sendError (res: ServerResponse, status: number, message: string, code: string, extra: JsonObject = {}, headers: Record<string, string> = {}): void {
  sendJson(res, status, { statusCode: status, error: STATUS_CODES[status], message, code, ...extra }, headers)
}

/** One of the service's own errors, with the body and Retry-After the service sends for it. */
function sendServiceError (res: ServerResponse, error: ServiceError, headers: Record<string, string> = {}): void {
  const retryAfter = retryAfterFor(error.code)
  sendJson(res, error.statusCode, errorBody(error), retryAfter === undefined ? headers : { ...headers, 'retry-after': String(retryAfter) })
}

function sendInvalid (res: ServerResponse, issues: Issue[]): void {
  const message = issues.map((issue) => `${issue.field} ${issue.message}`).join(', ')
  sendError(res, 400, message, 'FST_ERR_VALIDATION', { validation: issues })
}

function notFound (req: IncomingMessage, res: ServerResponse): void {
  sendServiceError(res, new RouteNotFound(String(req.method), String(req.url)))
}

/** Reads a JSON body within the limit, then calls `next`; 415, 413 or 400 otherwise. */
function readJson (req: IncomingMessage, res: ServerResponse, limit: number, next: BodyHandler): void {
  if (!JSON_MEDIA.test(String(req.headers['content-type']))) {
    sendError(res, 415, 'Unsupported Media Type', 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return
  }
  const chunks: Buffer[] = []
  let size = 0
  req.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size <= limit) chunks.push(chunk)
  })
  req.on('end', () => {
    if (size > limit) {
      sendError(res, 413, 'Request body is too large', 'FST_ERR_CTP_BODY_TOO_LARGE')
      return
    }
    let body: unknown
    try {
      body = JSON.parse(Buffer.concat(chunks, size).toString('utf8'))
    } catch {
      sendError(res, 400, 'Body is not valid JSON', 'FST_ERR_CTP_INVALID_JSON_BODY')
      return
    }
    next(res, body)
  })
}

/** Reasons a field fails its type, in the service's wording. */
function fieldIssues (body: JsonObject, checks: Array<[key: string, ok: boolean, type: string]>): Issue[] {
  return checks.filter(([, ok]) => !ok).map(([key, , type]) => ({
    field: `body.${key}`,
    message: key in body ? `must be ${type}` : `must have required property '${key}'`
  }))
}

const NOT_AN_OBJECT: Issue[] = [{ field: 'body', message: 'must be object' }]

const busy = (): Error => new Error('busy')

export function createBaselineServer (options: BaselineOptions): Server {
  const expiresIn = options.expiresIn ?? 3600
  const catsMax = options.catsMax ?? 100_000
  const bodyLimit = options.bodyLimit ?? 16_384
  const hashQueue = new HashQueue(options.hashConcurrency ?? 2, options.hashQueueMax ?? 100, 3000, { whenFull: busy, whenLate: busy, whenAbandoned: busy })
  const users = new UserStore(DEMO_USERS, hashQueue)
  const cats = new MemoryCatsStore()
  const sign = createSigner({ key: options.jwtSecret, algorithm: 'HS256', expiresIn: expiresIn * 1000 })
  const verify: (token: string) => JsonObject = createVerifier({
    key: options.jwtSecret,
    algorithms: ['HS256'],
    requiredClaims: ['exp', 'sub', 'username']
  })

  function unauthorized (res: ServerResponse, tokenSent: boolean): void {
    sendServiceError(res, tokenSent ? new InvalidToken() : new MissingToken(), {
      'www-authenticate': tokenSent ? 'Bearer error="invalid_token"' : 'Bearer'
    })
  }

  /** The guard's validation step: well-typed claims of a user who still exists under that name. */
  function identify (claims: JsonObject): Identity | undefined {
    const { sub, username } = claims
    const validSub = (typeof sub === 'number' && Number.isInteger(sub)) || (typeof sub === 'string' && sub.length > 0)
    if (!validSub || typeof username !== 'string' || username.length === 0) return undefined
    const user = users.findById(sub)
    if (user === undefined || user.username !== username) return undefined
    return { userId: user.id, username: user.username }
  }

  function profile (req: IncomingMessage, res: ServerResponse): void {
    const header = req.headers.authorization
    const prefix = header === undefined ? null : BEARER_PREFIX.exec(header)
    if (header === undefined || prefix === null) return unauthorized(res, false)
    let identity: Identity | undefined
    try {
      identity = identify(verify(header.slice(prefix[0].length)))
    } catch {
      identity = undefined
    }
    if (identity === undefined) return unauthorized(res, true)
    sendJson(res, 200, identity)
  }

  function login (res: ServerResponse, body: unknown): void {
    if (!isObject(body)) return sendInvalid(res, NOT_AN_OBJECT)
    const { username, password } = body
    if (typeof username !== 'string' || typeof password !== 'string' ||
      username.length === 0 || username.length > 128 || password.length === 0 || password.length > 1024) {
      return sendInvalid(res, [{ field: 'body', message: 'must have a username (1-128) and a password (1-1024)' }])
    }
    users.verifyCredentials(username, password).then((user) => {
      if (user === undefined) return sendServiceError(res, new InvalidCredentials())
      const token = sign({ sub: user.id, username: user.username })
      sendJson(res, 200, { access_token: token, token_type: 'Bearer', expires_in: expiresIn })
    }, () => {
      sendServiceError(res, new TooManyLoginsInProgress())
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
    if (cats.size >= catsMax) return sendServiceError(res, new CollectionFull(catsMax))
    sendJson(res, 201, cats.create({ name, age, breed }))
  }

  function updateCat (res: ServerResponse, id: number, body: unknown): void {
    if (!isObject(body)) return sendInvalid(res, NOT_AN_OBJECT)
    const problems = findMergeProblems(body)
    if (problems.length > 0) {
      return sendInvalid(res, problems.map((problem) => ({
        field: `body${problem.instancePath.replaceAll('/', '.')}`,
        message: problem.message
      })))
    }
    const cat = cats.update(id, body)
    if (cat === undefined) return sendEmpty(res)
    sendJson(res, 200, cat)
  }

  function oneCat (req: IncomingMessage, res: ServerResponse, rawId: string): void {
    const method = req.method
    if (method !== 'GET' && method !== 'PUT' && method !== 'DELETE') return notFound(req, res)
    if (!ID_PATTERN.test(rawId)) {
      return sendInvalid(res, [{ field: 'params.id', message: `must match pattern "${ID_PATTERN.source}"` }])
    }
    const id = Number(rawId)
    if (method === 'PUT') return readJson(req, res, bodyLimit, (res, body) => updateCat(res, id, body))
    if (method === 'DELETE') {
      cats.remove(id)
      return sendJson(res, 200, { deleted: true })
    }
    const cat = cats.find(id)
    if (cat === undefined) return sendEmpty(res)
    sendJson(res, 200, cat)
  }

  function route (req: IncomingMessage, res: ServerResponse): void {
    const url = String(req.url)
    const query = url.indexOf('?')
    const path = query === -1 ? url : url.slice(0, query)
    const method = req.method
    if (path === '/profile' && method === 'GET') return profile(req, res)
    if (path === '/auth/login' && method === 'POST') return readJson(req, res, bodyLimit, login)
    if (path === '/cats') {
      if (method === 'GET') return sendJson(res, 200, cats.list())
      if (method === 'POST') return readJson(req, res, bodyLimit, createCat)
    } else if (path.startsWith('/cats/')) {
      return oneCat(req, res, path.slice('/cats/'.length))
    }
    notFound(req, res)
  }

  const server = createServer(route)
  // Fastify's default, so both servers keep connections alike.
  server.keepAliveTimeout = 72_000
  return server
}
