import type { FastifyReply, FastifyRequest } from 'fastify'
import { errorBody } from './error-body.js'
import { sendError } from './problem-details.js'
import { BadRequest, InternalError, isServiceError, MethodNotAllowed, Overloaded, retryAfterFor, RouteNotFound, TooManyRequests } from '../errors.js'
import type { RouteMethods } from './route-methods.js'
import { toIssues, type FieldError } from './validation-issues.js'

// A 4xx raised without a code of its own (not by Fastify, which names all of its errors).
const GENERIC_CLIENT_ERROR_CODE = new BadRequest('').code
const INTERNAL = new InternalError()
// Code-less 4xx statuses with a code of their own: a host's global rate limit throws a bare 429 on the service's routes.
const CODE_BY_STATUS = new Map([[429, new TooManyRequests().code]])

/** What the handler reads of an error: Fastify's, ours, or anything thrown. */
export interface ThrownError extends Error {
  statusCode?: number
  code?: string
  validation?: FieldError[]
  validationContext?: string
  /** Seconds for Retry-After when it depends on the case (e.g. how long a lock lasts). */
  retryAfter?: number
}

/**
 * The challenge of a 401 that is not the token guard's (which sends `Bearer`, RFC 6750): a wrong password at login,
 * a refused refresh token. Those routes take no bearer token, so the scheme is the service's own: credentials go in
 * the body of `POST /auth/login` (docs/api.md). Not `Basic`, which would make a browser prompt for a password.
 */
export const LOGIN_CHALLENGE = 'Login realm="cats-auth-service"'

const inErrorRange = (status: number | undefined): status is number => status !== undefined && status >= 400 && status <= 599

/**
 * Sends every error in the one shape (as Problem Details when the client
 * prefers them, see sendError). A 4xx and the service's own 5xx keep
 * their message; any other failure is logged in full and answered with a
 * generic 500-range message, so no internals reach the client.
 */
export function errorHandler (thrown: ThrownError, request: FastifyRequest, reply: FastifyReply): void {
  // A 503 not of the service's own (a host's load shedding at its root, say) is answered as the service's overload,
  // which its routes document; the host's Retry-After, if it gave one, is kept.
  const foreignUnavailable = thrown.statusCode === 503 && !(thrown.code !== undefined && isServiceError(thrown.code, 503))
  const error: ThrownError = foreignUnavailable ? Object.assign(new Overloaded({ cause: thrown }), { retryAfter: thrown.retryAfter }) : thrown
  const statusCode = inErrorRange(error.statusCode) ? error.statusCode : 500
  const exposed = statusCode < 500 || (error.code !== undefined && isServiceError(error.code, statusCode))
  // A 503 the service chose (a dependency is down) is no fault of the request: the outage is logged once, where it is tracked.
  if (statusCode >= 500 && !(statusCode === 503 && exposed)) request.log.error({ err: error }, 'request failed')
  const code = !exposed ? INTERNAL.code : error.code ?? CODE_BY_STATUS.get(statusCode) ?? GENERIC_CLIENT_ERROR_CODE
  const retryAfter = error.retryAfter ?? retryAfterFor(code)
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
  // RFC 9110 §15.5.2: every 401 carries a challenge.
  if (statusCode === 401 && reply.getHeader('www-authenticate') === undefined) reply.header('www-authenticate', LOGIN_CHALLENGE)
  const message = exposed ? error.message : INTERNAL.message
  const validation = exposed && error.validation !== undefined ? toIssues(error.validationContext ?? 'request', error.validation) : undefined
  sendError(request, reply, errorBody({ statusCode, code, message }, validation))
}

export function notFoundHandler (request: FastifyRequest, reply: FastifyReply): void {
  sendError(request, reply, errorBody(new RouteNotFound(request.method, request.url)))
}

/**
 * The service's not-found handler: a path one of its routes has, with a method none of them serves, is a 405 with
 * `Allow` (RFC 9110 §15.5.6); any other request no route matched, a 404.
 */
export function notFoundHandlerFor (routes: RouteMethods): (request: FastifyRequest, reply: FastifyReply) => void {
  return (request, reply) => {
    const path = request.url.split('?', 1)[0]
    const allowed = routes.allowed(path)
    if (allowed === undefined) {
      notFoundHandler(request, reply)
      return
    }
    reply.header('allow', allowed.join(', '))
    sendError(request, reply, errorBody(new MethodNotAllowed(request.method, path)))
  }
}
