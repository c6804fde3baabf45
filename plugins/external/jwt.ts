import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import { jwtOptions } from '../../src/auth/jwt-options.js'

/** Signs and verifies access tokens: HS256 only, with the configured lifetime. */
export default fp(async (fastify) => {
  await fastify.register(fastifyJwt, jwtOptions(fastify.config))
}, { name: 'jwt' })
