import type { onRequestHookHandler } from 'fastify'

/**
 * The headers OWASP's REST security cheat sheet lists for an API (the values helmet sends): a CSP that lets a
 * JSON response load and frame nothing, HSTS, nosniff, DENY framing, no referrer. The /docs UI sends its own CSP
 * (see plugins/external/swagger.ts).
 */
export const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY'
} as const

/** Sets the security headers and echoes the request id (see server-options.ts), so that clients can quote it. */
export const securityHeaders: onRequestHookHandler = (request, reply, done) => {
  reply.headers(SECURITY_HEADERS).header('x-request-id', request.id)
  done()
}
