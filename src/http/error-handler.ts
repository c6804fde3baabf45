import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { ErrorReply, ValidationIssue } from './schemas.js'

/** The subset of an Ajv error that the error handler reads. */
export interface FieldError {
  instancePath: string
  message?: string
  params?: Record<string, unknown>
}

export interface HttpError extends Error {
  statusCode: number
  /** The message is meant for the client, even on a 5xx. */
  expose?: boolean
  code?: string
  headers?: Record<string, string>
  validation?: FieldError[]
  validationContext?: string
}

/** An error with an HTTP status, for failures the client caused. */
export function httpError (statusCode: number, message: string, extra: Partial<HttpError> = {}): HttpError {
  return Object.assign(new Error(message), { statusCode, expose: true }, extra)
}

/** A 400 in the same shape as a schema validation failure. */
export function validationError (context: string, errors: FieldError[]): HttpError {
  const message = toIssues(context, errors).map((issue) => `${issue.field} ${issue.message}`).join(', ')
  return httpError(400, message, { code: 'FST_ERR_VALIDATION', validation: errors, validationContext: context })
}

function fieldName (context: string, error: FieldError): string {
  const path = error.instancePath.split('/').slice(1).map(unescapePointer)
  const missing = error.params?.missingProperty
  if (typeof missing === 'string') path.push(missing)
  return [context, ...path].join('.')
}

function unescapePointer (segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~')
}

function toIssues (context: string, errors: FieldError[]): ValidationIssue[] {
  return errors.map((error) => ({ field: fieldName(context, error), message: error.message ?? 'is invalid' }))
}

export function errorHandler (error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode <= 599 ? error.statusCode : 500
  // A 503 the service chose to send (a dependency is down) is not a fault of the request: its cause is logged once, where it is tracked.
  if (status >= 500 && !(status === 503 && isExposed(error))) {
    request.log.error({ err: error }, 'request failed')
  }
  if ('headers' in error && error.headers !== undefined) {
    reply.headers(error.headers)
  }
  reply.code(status).send(errorBody(status, error))
}

function isExposed (error: FastifyError | HttpError): boolean {
  return 'expose' in error && error.expose === true
}

function errorBody (status: number, error: FastifyError | HttpError): ErrorReply {
  const exposed = status < 500 || isExposed(error)
  const body = simpleErrorBody(status, exposed ? error.message : 'An internal error occurred')
  if (exposed && error.code !== undefined) body.code = error.code
  if (status < 500 && error.validation !== undefined) {
    body.validation = toIssues(error.validationContext ?? 'request', error.validation)
  }
  return body
}

/** The D7 body for a status and a message meant for the client. */
export function simpleErrorBody (statusCode: number, message: string): ErrorReply {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message }
}

export function notFoundHandler (request: FastifyRequest, reply: FastifyReply): void {
  reply.code(404).send(simpleErrorBody(404, `Route ${request.method} ${request.url} not found`))
}
