import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { VerifiedClaims, type Identity } from '../schemas.js'
import { bearerToken } from './bearer-token.js'
import { hasAllowedAge, type IsRevoked, type ValidateToken } from './token-claims.js'
import { errorBody } from '../../http/error-body.js'
import { sendError } from '../../http/problem-details.js'
import { InvalidToken, MissingToken } from '../../errors.js'
import { hostAnswer, mapMaybePromise, type MaybePromise } from '../../maybe-promise.js'
import { requestSpan } from '../../tracing/spans.js'

/**
 * The token guard: an onRequest hook that keeps the token's identity and claims on the request (`verifiedOf`), or answers 401. As a route's
 * hook (called with `done`) it answers synchronously whenever its checks do (see MaybePromise); awaited, it is
 * an async hook.
 */
export interface TokenGuard {
  (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
  (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void
}

/** What the guard verified of a request's token. */
export interface Verified {
  /** The user the token was issued to. */
  identity: Identity
  /** The token's verified claims (logout and the session routes read them). */
  claims: VerifiedClaims
}

/**
 * Where the guard keeps what it verified: a symbol of the package's own, so that no request decorator of a host
 * (`user` of @fastify/jwt, say) is claimed or overwritten, on the service's routes or on the host's.
 */
const VERIFIED = Symbol('cats-auth-service.verified')
type GuardedRequest = FastifyRequest & { [VERIFIED]?: Verified | null }

/** Gives the requests of a scope the guard's slot up front, so that setting it does not change their shape. */
export function decorateVerified (fastify: FastifyInstance): void {
  fastify.decorateRequest(VERIFIED, null)
}

/** What the guard verified of this request's token; throws when the guard has not accepted the request. */
export function verifiedOf (request: FastifyRequest): Verified {
  const verified = (request as GuardedRequest)[VERIFIED]
  if (verified == null) throw new Error('the token guard has not accepted this request: add the guard to the route\'s onRequest')
  return verified
}

export interface TokenGuardOptions {
  /** Verifies a token's signature and expiry (`keyedVerify`); throws when it fails. */
  verify: (token: string) => unknown
  /** The configured access-token lifetime: no token may claim a longer one. */
  lifetimeSeconds: number
  /** Turns verified claims into the request's identity, or undefined to refuse them. */
  validateToken: ValidateToken
  /** The service's denylist (logout, reused refresh tokens, ended sessions). */
  denylist: { isRevoked: (claims: VerifiedClaims) => MaybePromise<boolean> }
  /** A host's own revocation check, consulted after the service's. */
  isRevoked?: IsRevoked
}

const claimsCheck = TypeCompiler.Compile(VerifiedClaims)
const MISSING_TOKEN_BODY = errorBody(new MissingToken())
const INVALID_TOKEN_BODY = errorBody(new InvalidToken())

/** Answers 401 (answered directly, not thrown: this path is hot under attack and needs no stack trace); false is the verdict. */
function refuse (request: FastifyRequest, reply: FastifyReply, tokenSent: boolean): false {
  reply.header('www-authenticate', tokenSent ? 'Bearer error="invalid_token"' : 'Bearer')
  sendError(request, reply, tokenSent ? INVALID_TOKEN_BODY : MISSING_TOKEN_BODY)
  return false
}

/** The claims of a well-formed, validly signed token of an allowed age; undefined otherwise. */
function verifiedClaims (token: string, { verify, lifetimeSeconds }: TokenGuardOptions): VerifiedClaims | undefined {
  let claims: unknown
  try {
    claims = verify(token)
  } catch {
    return undefined
  }
  // The claims' shape and age are checked before a host's validateToken sees them.
  if (!claimsCheck.Check(claims) || !hasAllowedAge(claims, lifetimeSeconds, Math.floor(Date.now() / 1000))) return undefined
  return claims
}

export function tokenGuard (options: TokenGuardOptions): TokenGuard {
  const { validateToken, isRevoked, denylist } = options

  /** Whether the service's denylist or the host's own check denies the token. */
  function revoked (claims: VerifiedClaims, request: FastifyRequest): MaybePromise<boolean> {
    const denied = denylist.isRevoked(claims)
    if (isRevoked === undefined) return denied
    return mapMaybePromise(denied, (yes) => yes || hostAnswer(isRevoked(claims, request)))
  }

  /** Whether the token is accepted (what it carries kept on the request) or refused (the 401 sent). */
  function check (request: FastifyRequest, reply: FastifyReply): MaybePromise<boolean> {
    const token = bearerToken(request.headers.authorization)
    if (token === undefined) return refuse(request, reply, false)
    const claims = verifiedClaims(token, options)
    if (claims === undefined) return refuse(request, reply, true)
    return mapMaybePromise(revoked(claims, request), (denied) => denied
      ? refuse(request, reply, true)
      : mapMaybePromise(hostAnswer(validateToken(claims, request)), (identity) => {
        if (identity === undefined) return refuse(request, reply, true)
        ;(request as GuardedRequest)[VERIFIED] = { identity, claims }
        // The request's span names the user the token was issued to.
        requestSpan(request)?.setAttribute('enduser.id', String(claims.sub))
        return true
      }))
  }

  function guard (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>
  function guard (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void
  function guard (request: FastifyRequest, reply: FastifyReply, done?: HookHandlerDoneFunction): Promise<FastifyReply | undefined> | undefined {
    const accepted = check(request, reply)
    // Awaited: settles as an async hook's would, with the reply once refused.
    if (done === undefined) return Promise.resolve(accepted).then((ok) => ok ? undefined : reply)
    // As a hook: done() lets the request through; a refused one has been answered, and done is not called.
    if (accepted === true) done()
    else if (accepted !== false) accepted.then((ok) => { if (ok) done() }, done)
    return undefined
  }
  return guard
}
