import { randomUUID } from 'node:crypto'
import { LogController, type FastifyHttpOptions, type FastifyRequest } from 'fastify'
import type { IncomingMessage, Server, ServerOptions } from 'node:http'
import { pino, type DestinationStream } from 'pino'
import { lazyLogger, writesAt } from './lazy-logger.js'
import { parseTrustProxy, type Config } from '../config.js'
import { clientErrorHandler } from './client-errors.js'
import { errorHandler } from './error-handler.js'
import { traceLogFields } from '../tracing/spans.js'

// Only a UUID is taken from the client: the id is echoed and written in every log line, and
// a freer format would let a token or password sent there by mistake reach the logs.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A client's x-request-id when it is a UUID, else a new UUID. */
export function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && UUID.test(given) ? given : randomUUID()
}

/** A URL as logged: the query string may carry a token or a password, so it is replaced. */
export function urlForLog (url = ''): string {
  const query = url.indexOf('?')
  return query === -1 ? url : `${url.slice(0, query)}?[redacted]`
}

/**
 * Fastify's request log serializer with the query string of the URL redacted. Fastify
 * gives it the Fastify request (client address as trusted through proxies); a raw Node
 * request logged under `req` is serialized alike. No header is logged, so no token or cookie.
 */
export function requestForLog (request: FastifyRequest | IncomingMessage): Record<string, unknown> {
  const fastifyRequest = 'ip' in request
  return {
    method: request.method,
    url: urlForLog(request.url),
    host: fastifyRequest ? request.host : request.headers.host,
    remoteAddress: fastifyRequest ? request.ip : request.socket.remoteAddress,
    remotePort: request.socket.remotePort
  }
}

/** The server settings that node:http itself carries out: its timeouts, idle-socket one included, and header limit. */
export type ConnectionSettings = Required<Pick<FastifyHttpOptions<Server>, 'connectionTimeout' | 'keepAliveTimeout' | 'requestTimeout'>> & { http: ServerOptions }

/** The standalone server's options; the connection settings are always set. */
export type StandaloneServerOptions = FastifyHttpOptions<Server> & ConnectionSettings

/** The limits that keep slow or oversized requests from holding the server's connections. */
export function connectionSettings (config: Config): ConnectionSettings {
  return {
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

/** What the log lines carry besides their own fields. */
export interface LogOptions {
  /** `trace_id` and `span_id` of the span in progress on every line written inside one: on when traces are. */
  traceIds?: boolean
}

/**
 * Options of the standalone server (a host app that embeds the plugin sets its own):
 * logging with secrets redacted (query strings included) to `destination` (standard output by default),
 * request ids, proxy trust, the body limit and the connection settings.
 */
export function serverOptions (config: Config, destination?: DestinationStream, { traceIds = false }: LogOptions = {}): StandaloneServerOptions {
  return {
    loggerInstance: lazyLogger(pino({
      level: config.LOG_LEVEL,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.access_token', '*.refresh_token'],
        censor: '[redacted]'
      },
      // Without traces no mixin at all: nothing is added to a line's cost.
      ...(traceIds ? { mixin: traceLogFields } : {})
    }, destination), { req: requestForLog }),
    logController: new LogController({ disableRequestLogging: !writesAt(config.LOG_LEVEL, 'info') }),
    clientErrorHandler,
    // A URL the router refuses (a parameter over its length, a bad escape): Fastify's own answer
    // quotes the whole URL in another shape; the service's error handler shortens and shapes it.
    frameworkErrors: errorHandler,
    requestIdHeader: false,
    genReqId: requestId,
    trustProxy: parseTrustProxy(config.TRUST_PROXY),
    bodyLimit: config.BODY_LIMIT,
    // Opening an embedded PGlite database can take several seconds on a busy host.
    pluginTimeout: 60_000,
    ...connectionSettings(config)
  }
}
