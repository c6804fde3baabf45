import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import Fastify from 'fastify'
import app from '../app.js'

// Writes the OpenAPI document of the service; the secret only lets the app start, nothing is signed.
const output = process.argv[2] ?? 'openapi.json'
const server = Fastify()
await server.register(app, {
  config: { ...process.env, JWT_SECRET: randomBytes(32).toString('hex'), DOCS_ENABLED: true, LOG_LEVEL: 'silent' }
})
await server.ready()
const response = await server.inject('/docs/json')
await writeFile(output, JSON.stringify(response.json(), null, 2) + '\n')
await server.close()
console.log(`OpenAPI document written to ${output}`)
