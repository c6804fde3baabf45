import fp from 'fastify-plugin'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { TokenClaims } from '../src/auth/schemas.js'
import { simpleErrorBody } from '../src/http/error-handler.js'
import { validateTokenUser } from '../src/auth/token-claims.js'
import type { AppOptions } from '../src/app.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The token guard: an onRequest hook that sets request.user or answers 401. */
    authenticate: onRequestAsyncHookHandler
  }
}

const claimsCheck = TypeCompiler.Compile(TokenClaims)
const BEARER_PREFIX = /^bearer +/i

/** What follows `Bearer ` (the scheme name is case-insensitive); undefined for another or no scheme. */
function bearerToken (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const prefix = BEARER_PREFIX.exec(header)
  return prefix === null ? undefined : header.slice(prefix[0].length)
}

// Answers directly instead of throwing: the 401 path is hot under attack and needs no stack trace.
function refuse (reply: FastifyReply, tokenSent: boolean): FastifyReply {
  return reply.code(401)
    .header('www-authenticate', tokenSent ? 'Bearer error="invalid_token"' : 'Bearer')
    .send(simpleErrorBody(401, tokenSent ? 'Invalid or expired access token' : 'Missing bearer token'))
}

export default fp<AppOptions>(async (fastify, opts) => {
  const validateToken = opts.validateToken ?? validateTokenUser(fastify.users)

  async function authenticate (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const token = bearerToken(request.headers.authorization)
    if (token === undefined) return refuse(reply, false)
    let claims: unknown
    try {
      claims = fastify.jwt.verify(token)
    } catch {
      return refuse(reply, true)
    }
    const identity = claimsCheck.Check(claims) ? await validateToken(claims, request) : undefined
    if (identity === undefined) return refuse(reply, true)
    request.user = identity
  }

  fastify.decorate('authenticate', authenticate)
}, { name: 'authenticate', dependencies: ['jwt', 'users'] })
