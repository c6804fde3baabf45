import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import { Histogram, Registry } from 'prom-client'
import { responseHeadersHook } from '../src/http/security-headers.js'
import { CatReply, CreateCatBody, JSON_CONTENT_TYPE } from '../src/cats/schemas.js'

export interface FloorOptions {
  /** Cats 1..n to serve. */
  cats: number
  /** Send the service's security headers and a request id (a UUID) on every response. */
  headers: boolean
  /** Observe each request's duration in a prom-client histogram by method, route and status, in an onResponse hook. */
  metrics?: boolean
}

/**
 * The floor under the service's cost on GET /cats/:id and POST /cats: the least
 * a Fastify app can do for them — these routes, no logger, no other hooks; a
 * sync handler returning the cat's JSON text for the read, and for the create
 * the service's body and reply schemas (Ajv and fast-json-stringify, as any
 * validated Fastify route has) around a Map. With `headers`, it adds only what
 * the service sends on every response. It tells how much of the
 * project/baseline ratio is Fastify itself and those headers, not the
 * service's own code. With `metrics`, it adds what the service does per request with metrics on.
 */
export function createFloorServer (options: FloorOptions): FastifyInstance {
  const app = Fastify({ logger: false, genReqId: options.headers ? () => randomUUID() : undefined })
  const cats = new Map<number, string>()
  for (let id = 1; id <= options.cats; id++) cats.set(id, JSON.stringify({ id, name: 'Tom', age: 3, breed: 'x' }))
  // The hook the service registers (plugins/response-headers.ts).
  if (options.headers) app.addHook('onRequest', responseHeadersHook())
  if (options.metrics === true) {
    const duration = new Histogram({ name: 'floor_request_duration_seconds', help: 'Request duration', labelNames: ['method', 'route', 'status_code'], registers: [new Registry()] })
    app.addHook('onResponse', (request, reply, done) => {
      duration.observe({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: reply.statusCode }, reply.elapsedTime / 1000)
      done()
    })
  }
  app.get<{ Params: { id: string } }>('/cats/:id', (request, reply) => {
    const json = cats.get(Number(request.params.id))
    if (json === undefined) return ''
    reply.type(JSON_CONTENT_TYPE)
    return json
  })
  app.post<{ Body: CreateCatBody }>('/cats', { schema: { body: CreateCatBody, response: { 201: CatReply } } }, (request, reply) => {
    const cat = { id: cats.size + 1, ...request.body }
    cats.set(cat.id, JSON.stringify(cat))
    reply.code(201)
    return cat
  })
  return app
}
