import { randomUUID } from 'node:crypto'
import type { FastifyHttpOptions } from 'fastify'
import type { IncomingMessage, Server } from 'node:http'
import { parseTrustProxy, type Config } from '../config.js'
import { lazyChildLogger } from './request-logger.js'
import { clientErrorHandler } from './client-errors.js'

const WELL_FORMED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** A client's x-request-id when it is well-formed, else a new UUID. */
function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && WELL_FORMED_REQUEST_ID.test(given) ? given : randomUUID()
}

/**
 * Options of the standalone server (a host app that embeds the plugin sets its own):
 * logging with secrets redacted, request ids, proxy trust and the limits that
 * keep slow or oversized requests from holding the server.
 */
export function serverOptions (config: Config): FastifyHttpOptions<Server> {
  return {
    logger: {
      level: config.LOG_LEVEL,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.access_token'],
        censor: '[redacted]'
      }
    },
    childLoggerFactory: lazyChildLogger,
    clientErrorHandler,
    requestIdHeader: false,
    genReqId: requestId,
    trustProxy: parseTrustProxy(config.TRUST_PROXY),
    bodyLimit: config.BODY_LIMIT,
    // Opening an embedded PGlite database can take several seconds on a busy host.
    pluginTimeout: 60_000,
    connectionTimeout: config.CONNECTION_TIMEOUT_MS,
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    http: {
      maxHeaderSize: config.MAX_HEADER_BYTES,
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      // How often Node checks the header and request timeouts (its default is 30 s).
      connectionsCheckingInterval: 1000
    }
  }
}
