import fp from 'fastify-plugin'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { VerifiedClaims, type Identity } from '../src/auth/schemas.js'
import { errorBody } from '../src/http/error-body.js'
import { InvalidToken, MissingToken } from '../src/http/errors.js'
import { hasAllowedAge, userStillExists } from '../src/auth/token-claims.js'
import { durationToSeconds } from '../src/config.js'
import { bearerToken } from '../src/auth/bearer-token.js'
import type { AppOptions } from '../src/app-options.js'
import type { Sessions } from '../src/auth/sessions.js'
import { fromHost, mapMaybePromise, type MaybePromise } from '../src/maybe-promise.js'

/**
 * The token guard, an onRequest hook that sets request.user or answers 401. Fastify calls a route's hook with
 * `done`: then the guard answers synchronously whenever its checks do (the service's own always do with the memory
 * stores), which spares each guarded request an async hook's promise and the microtask that would run the rest of
 * it. Called without `done` (`await fastify.authenticate(request, reply)`), it returns a promise, as an async hook.
 */
export interface TokenGuard {
  (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
  (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The token guard: an onRequest hook that sets request.user or answers 401 (see TokenGuard). */
    authenticate: TokenGuard
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

/** Answers 401; false is the guard's verdict. */
function refuse (reply: FastifyReply, tokenSent: boolean): false {
  reply.code(401)
    .header('www-authenticate', tokenSent ? 'Bearer error="invalid_token"' : 'Bearer')
    .send(tokenSent ? INVALID_TOKEN_BODY : MISSING_TOKEN_BODY)
  return false
}

export default fp<AppOptions>(async (fastify, opts) => {
  const validateToken = opts.validateToken ?? userStillExists(fastify.users)
  const hostIsRevoked = opts.isRevoked
  const lifetimeSeconds = durationToSeconds(fastify.config.JWT_EXPIRES_IN)
  fastify.decorateRequest('tokenClaims', null)
  // The service's session store, looked up once the app is ready: its plugin may load after this one. A host's
  // guard scope has none, so no denylist of the service's.
  let sessions: Sessions | undefined
  fastify.addHook('onReady', async () => {
    sessions = fastify.hasDecorator('sessions') ? fastify.sessions : undefined
  })

  /** Whether the service's denylist or the host's own check denies the token; a promise only when one answers with it. */
  function isRevoked (claims: VerifiedClaims, request: FastifyRequest): MaybePromise<boolean> {
    const revoked = sessions === undefined ? false : sessions.isRevoked(claims)
    if (hostIsRevoked === undefined) return revoked
    return mapMaybePromise(revoked, (denied) => denied || fromHost(hostIsRevoked(claims, request)))
  }

  /** Lets the request through with the identity validateToken gave, or refuses the token without one. */
  function admit (request: FastifyRequest, reply: FastifyReply, claims: VerifiedClaims, identity: Identity | undefined): boolean {
    if (identity === undefined) return refuse(reply, true)
    request.user = identity
    request.tokenClaims = claims
    return true
  }

  /** Whether the request's token is accepted (request.user is set) or refused (the 401 is sent); a promise only when a check answers with one. */
  function check (request: FastifyRequest, reply: FastifyReply): MaybePromise<boolean> {
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
    return mapMaybePromise(isRevoked(claims, request), (revoked) => revoked
      ? refuse(reply, true)
      : mapMaybePromise(fromHost(validateToken(claims, request)), (identity) => admit(request, reply, claims, identity)))
  }

  function authenticate (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
  function authenticate (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void
  function authenticate (request: FastifyRequest, reply: FastifyReply, done?: HookHandlerDoneFunction): Promise<FastifyReply | undefined> | undefined {
    const accepted = check(request, reply)
    // Awaited, it settles as an async hook's would: returning the reply once refused (a thenable, so the promise
    // settles when the 401 has been sent).
    if (done === undefined) return Promise.resolve(accepted).then((ok) => ok ? undefined : reply)
    // As a callback hook: done() lets the request through; a refused one has been answered, and done is not called.
    if (accepted === true) done()
    else if (accepted !== false) accepted.then((ok) => { if (ok) done() }, done)
    return undefined
  }

  fastify.decorate('authenticate', authenticate)
}, { name: 'authenticate', dependencies: ['config', 'jwt', 'users'] })
