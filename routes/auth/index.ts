import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBody, LoginReply } from '../../src/schemas/auth.js'
import { ErrorReply } from '../../src/schemas/common.js'
import { durationToSeconds } from '../../src/config.js'
import { httpError } from '../../src/errors.js'

const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  const expiresIn = durationToSeconds(fastify.config.JWT_EXPIRES_IN)

  fastify.post('/login', {
    schema: {
      tags: ['auth'],
      summary: 'Exchange a username and password for an access token',
      body: LoginBody,
      response: { 200: LoginReply, 400: ErrorReply, 401: ErrorReply, 415: ErrorReply, 429: ErrorReply, 503: ErrorReply }
    }
  }, async (request) => {
    const { username, password } = request.body
    const user = await fastify.users.verifyCredentials(username, password)
    if (user === undefined) throw httpError(401, 'Invalid username or password')
    const accessToken = fastify.jwt.sign({ sub: user.id, username: user.username })
    return { access_token: accessToken, token_type: 'Bearer' as const, expires_in: expiresIn }
  })
}

export default auth
