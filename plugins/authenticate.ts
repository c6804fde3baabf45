import fp from 'fastify-plugin'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { VerifiedClaims } from '../src/auth/schemas.js'
import { errorBody } from '../src/http/error-body.js'
import { InvalidToken, MissingToken } from '../src/http/errors.js'
import { hasAllowedAge, userStillExists } from '../src/auth/token-claims.js'
import { durationToSeconds } from '../src/config.js'
import { bearerToken } from '../src/auth/bearer-token.js'
import type { AppOptions } from '../src/app-options.js'
import type { Sessions } from '../src/auth/sessions.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The token guard: an onRequest hook that sets request.user or answers 401. */
    authenticate: onRequestAsyncHookHandler
  }
  interface FastifyRequest {
    /** The verified claims of the request's access token, set by the guard (logout reads them). */
    tokenClaims: VerifiedClaims | null
  }
}

const claimsCheck = TypeCompiler.Compile(VerifiedClaims)

// The 401 bodies, built once: the guard answers directly instead of throwing, because
// the 401 path is hot under attack and needs no stack trace.
const MISSING_TOKEN_BODY = errorBody(new MissingToken())
const INVALID_TOKEN_BODY = errorBody(new InvalidToken())

function refuse (reply: FastifyReply, tokenSent: boolean): FastifyReply {
  return reply.code(401)
    .header('www-authenticate', tokenSent ? 'Bearer error="invalid_token"' : 'Bearer')
    .send(tokenSent ? INVALID_TOKEN_BODY : MISSING_TOKEN_BODY)
}

export default fp<AppOptions>(async (fastify, opts) => {
  const validateToken = opts.validateToken ?? userStillExists(fastify.users)
  const hostIsRevoked = opts.isRevoked
  const lifetimeSeconds = durationToSeconds(fastify.config.JWT_EXPIRES_IN)
  fastify.decorateRequest('tokenClaims', null)
  // The service's session store, looked up at the first request: its plugin may load after this one, and a
  // host's guard scope has none (then it is looked up again each time, and found absent).
  let sessions: Sessions | undefined

  async function authenticate (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const token = bearerToken(request.headers.authorization)
    if (token === undefined) return refuse(reply, false)
    let claims: unknown
    try {
      claims = fastify.jwt.verify(token)
    } catch {
      return refuse(reply, true)
    }
    // The claims' shape and age are checked before a host's validateToken sees them.
    if (!claimsCheck.Check(claims) || !hasAllowedAge(claims, lifetimeSeconds, Math.floor(Date.now() / 1000))) {
      return refuse(reply, true)
    }
    // The service's denylist (absent in a host's guard scope, which has no session store). With the memory
    // store the answer is a boolean, so the common path awaits nothing.
    sessions ??= fastify.hasDecorator('sessions') ? fastify.sessions : undefined
    const revoked = sessions === undefined ? false : sessions.isRevoked(claims)
    if (revoked === true || (revoked !== false && await revoked)) return refuse(reply, true)
    if (hostIsRevoked !== undefined && await hostIsRevoked(claims, request)) return refuse(reply, true)
    // The default check answers at once; only a host's asynchronous one is awaited.
    const validated = validateToken(claims, request)
    const identity = validated instanceof Promise ? await validated : validated
    if (identity === undefined) return refuse(reply, true)
    request.user = identity
    request.tokenClaims = claims
  }

  fastify.decorate('authenticate', authenticate)
}, { name: 'authenticate', dependencies: ['config', 'jwt', 'users'] })
