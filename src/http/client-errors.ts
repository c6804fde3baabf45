import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { errorBody } from './error-body.js'
import { ClientTimeout, HeadersTooLarge, MalformedRequest } from '../errors.js'

/** The error Node's HTTP parser reports for a connection. */
interface ClientError extends Error {
  code?: string
}

function errorFor (error: ClientError): InstanceType<typeof ClientTimeout> {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ClientTimeout()
  if (error.code === 'HPE_HEADER_OVERFLOW') return new HeadersTooLarge()
  return new MalformedRequest()
}

/**
 * Fastify's clientErrorHandler option: a request Node's HTTP parser refuses
 * (too slow, headers too large, not HTTP) never reaches Fastify, so it is
 * answered here, in the service's error shape, before the connection closes.
 */
export function clientErrorHandler (this: FastifyInstance, error: ClientError, socket: Socket): void {
  const known = errorFor(error)
  // Not the error itself: Node attaches the raw bytes received (`rawPacket`), which may hold an
  // Authorization header or a login body; its code and message say what was wrong.
  this.log.trace({ code: error.code, reason: error.message }, 'client error')
  // A connection the client reset or closed has no one left to answer.
  if (socket.writable) {
    const body = JSON.stringify(errorBody(known))
    socket.write(`HTTP/1.1 ${known.statusCode} ${STATUS_CODES[known.statusCode]}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  }
  socket.destroy(error)
}
