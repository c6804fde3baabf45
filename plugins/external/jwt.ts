import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import { jwtOptions } from '../../src/auth/jwt-options.js'

/** Signs access tokens with the configured key and lifetime (`fastify.jwt.sign`). */
export default fp(async (fastify) => {
  await fastify.register(fastifyJwt, jwtOptions(fastify.config, fastify.tokenKeys))
}, { name: 'jwt' })
