import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { errorBody } from './error-body.js'
import { PROBLEM_JSON, prefersProblemDetails, problemDetails } from './problem-details.js'
import { ClientTimeout, HeadersTooLarge, MalformedRequest } from '../errors.js'

/** The error Node's HTTP parser reports for a connection. */
interface ClientError extends Error {
  code?: string
}

/**
 * A connection as Node's HTTP server keeps it: once a request's headers have arrived, its response is the
 * socket's `_httpMessage` (Node's own answer to a client error reads it too); before, there is none.
 */
interface ServerSocket extends Socket {
  _httpMessage?: ServerResponse | null
}

function errorFor (error: ClientError): InstanceType<typeof ClientTimeout> {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ClientTimeout()
  if (error.code === 'HPE_HEADER_OVERFLOW') return new HeadersTooLarge()
  return new MalformedRequest()
}

/** The answer's content type and body: Problem Details when the request's headers have arrived and prefer them. */
function answerFor (socket: ServerSocket, known: InstanceType<typeof ClientTimeout>): { type: string, body: string } {
  const body = errorBody(known)
  const request = socket._httpMessage?.req
  if (request === undefined || !prefersProblemDetails(request.headers.accept)) return { type: 'application/json; charset=utf-8', body: JSON.stringify(body) }
  return { type: PROBLEM_JSON, body: JSON.stringify(problemDetails(body, String(request.url))) }
}

/**
 * Fastify's clientErrorHandler option: a request Node's HTTP parser refuses
 * (too slow, headers too large, not HTTP) never reaches a route, so it is
 * answered here, in the service's error shape, before the connection closes.
 */
export function clientErrorHandler (this: FastifyInstance, error: ClientError, socket: ServerSocket): void {
  const known = errorFor(error)
  // Not the error itself: Node attaches the raw bytes received (`rawPacket`), which may hold an
  // Authorization header or a login body; its code and message say what was wrong.
  this.log.trace({ code: error.code, reason: error.message }, 'client error')
  // A connection the client reset or closed has no one left to answer.
  if (socket.writable) {
    const { type, body } = answerFor(socket, known)
    // Vary as on every error answer: the shape depends on Accept.
    socket.write(`HTTP/1.1 ${known.statusCode} ${STATUS_CODES[known.statusCode]}\r\n` +
      `Content-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nVary: Accept\r\nConnection: close\r\n\r\n${body}`)
  }
  socket.destroy(error)
}
