import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import serviceApp, { openapiRefResolver, openapiSecuritySchemes } from '../../../src/app.js'
import type { ConfigInput } from '../../../src/config.js'
import { testConfig } from '../../support/app.js'
import { lint } from '../../support/redocly.js'

// A host app laid out as fastify/demo's: its own @fastify/swagger at its root, its document at /api/docs/json, its
// own `$id` schemas (`Identity` is also a name of the service's, `ErrorReply` a likely one), the service below.

const PREFIX = '/api/cats-service'

interface Operation {
  operationId?: string
  security?: Array<Record<string, string[]>>
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>
}

interface Document {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, { properties?: Record<string, unknown>, title?: string }>, securitySchemes?: Record<string, unknown> }
}

interface HostSetup {
  /** Registers the service under PREFIX with these options (none: the host alone). */
  service?: { hideFromHostDocument?: boolean, config?: Partial<ConfigInput> }
  /** Passes the package's exports to the host's @fastify/swagger. */
  exports?: boolean
}

const HOST_BEARER = { type: 'http', scheme: 'bearer', description: 'The host\'s own tokens' } as const

async function hostApp (t: Test, { service, exports = false }: HostSetup): Promise<FastifyInstance> {
  const host = Fastify({ pluginTimeout: 60_000 }) // generous: a loaded machine compiles the plugin slowly
  t.teardown(() => host.close())
  await host.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Host app', description: 'An app that embeds the cats service', version: '1.0.0', license: { name: 'MIT', identifier: 'MIT' } },
      servers: [{ url: '/', description: 'This server' }],
      tags: [{ name: 'host', description: 'The host\'s own routes' }],
      components: { securitySchemes: { bearerAuth: HOST_BEARER, ...(exports ? openapiSecuritySchemes : {}) } }
    },
    // The host names its own components after their $id, as the service does.
    ...(exports ? { refResolver: openapiRefResolver({ buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` }) } : {})
  })
  await host.register(swaggerUi, { routePrefix: '/api/docs' })
  host.addSchema({ $id: 'ErrorReply', type: 'object', properties: { message: { type: 'string' } }, required: ['message'] })
  host.addSchema({ $id: 'Identity', type: 'object', properties: { hostUser: { type: 'string' } }, required: ['hostUser'] })
  host.get('/api/me', {
    schema: {
      operationId: 'getMe',
      summary: 'The host\'s user',
      tags: ['host'],
      security: [{ bearerAuth: [] }],
      response: { 200: { $ref: 'Identity#' }, 401: { $ref: 'ErrorReply#', description: 'No token' } }
    }
  }, async () => ({ hostUser: 'ada' }))
  if (service !== undefined) {
    await host.register(serviceApp, {
      prefix: PREFIX, config: { ...testConfig, ...service.config }, hideFromHostDocument: service.hideFromHostDocument
    })
  }
  await host.ready()
  return host
}

/** The host's document as a client downloads it, after checking that it is served. */
async function hostDocument (t: Test, host: FastifyInstance): Promise<Document> {
  const res = await host.inject('/api/docs/json')
  t.equal(res.statusCode, 200, res.body.slice(0, 300))
  return res.json()
}

/** The service's own document under its prefix. */
async function serviceDocument (host: FastifyInstance): Promise<unknown> {
  return (await host.inject(`${PREFIX}/docs/json`)).json()
}

/** Every `$ref` in the document names one of its components. */
function unresolvedReferences (document: Document): string[] {
  const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(([, name]) => name)
  return refs.filter((name) => !(name in document.components.schemas))
}

const operations = (document: Document, prefix: string) => Object.entries(document.paths)
  .filter(([path]) => path.startsWith(prefix))
  .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path: path.slice(prefix.length), method, operation })))

t.test('the host document with the exports: 200, the service operations with their security, readable names, the host\'s schemas intact', async (t) => {
  const host = await hostApp(t, { service: {}, exports: true })
  const doc = await hostDocument(t, host)
  const own = await serviceDocument(host) as Document

  const hosted = operations(doc, PREFIX)
  t.strictSame(hosted.map(({ operation }) => operation.operationId).sort(), operations(own, '').map(({ operation }) => operation.operationId).sort(),
    'every operation of the service, under the prefix')
  for (const { path, method, operation } of hosted) {
    const expected = own.paths[path][method].security?.map((requirement) => Object.fromEntries(Object.keys(requirement).map((name) => [`cats-auth-service.${name}`, []])))
    t.strictSame(operation.security, expected, `${method} ${path}: the service's security, under the service's scheme name`)
  }
  t.strictSame(doc.paths[`${PREFIX}/profile`].get.security, [{ 'cats-auth-service.bearerAuth': [] }])
  t.strictSame(doc.paths[`${PREFIX}/cats`].get.security, [])
  t.strictSame(doc.components.securitySchemes, { bearerAuth: HOST_BEARER, ...openapiSecuritySchemes }, 'the host\'s scheme and the service\'s')

  const names = Object.keys(doc.components.schemas).sort()
  t.strictSame(names.filter((name) => /^def-\d+$/.test(name)), [], 'no def-N name')
  t.strictSame(names, ['ErrorReply', 'Identity', ...Object.keys(own.components.schemas).map((name) => `cats-auth-service.${name}`)].sort())
  t.strictSame(unresolvedReferences(doc), [])
  t.strictSame(doc.components.schemas.Identity.properties, { hostUser: { type: 'string' } }, 'the host\'s Identity is its own')
  t.strictSame(doc.paths['/api/me'].get.responses['200'].content?.['application/json'].schema, { $ref: '#/components/schemas/Identity' })
  t.strictSame(doc.paths[`${PREFIX}/profile`].get.responses['200'].content?.['application/json'].schema, { $ref: '#/components/schemas/cats-auth-service.Identity' })
  t.ok(doc.components.schemas['cats-auth-service.Identity'].properties?.userId, 'the service\'s Identity is the service\'s')

  // The service itself still validates and serializes with its own schemas beside the host's.
  const login = await host.inject({ method: 'POST', url: `${PREFIX}/auth/login`, payload: { username: 'john', password: 'changeme' } })
  t.equal(login.statusCode, 200)
  const profile = await host.inject({ url: `${PREFIX}/profile`, headers: { authorization: `Bearer ${login.json().access_token}` } })
  t.strictSame(profile.json(), { userId: 1, username: 'john' })
  t.equal((await host.inject({ method: 'POST', url: `${PREFIX}/cats`, payload: { name: 'Tom', age: '3', breed: 'x' } })).statusCode, 400)
})

t.test('the host document without the exports: still 200, the service adds the scheme its operations name', async (t) => {
  const host = await hostApp(t, { service: { config: { CATS_AUTH: 'required' } } })
  const doc = await hostDocument(t, host)
  t.strictSame(doc.paths[`${PREFIX}/cats`].post.security, [{ 'cats-auth-service.bearerAuth': [] }])
  t.strictSame(doc.components.securitySchemes, { bearerAuth: HOST_BEARER, ...openapiSecuritySchemes })
  t.strictSame(unresolvedReferences(doc), [])
  t.strictSame(doc.paths['/api/me'].get.responses['200'].content?.['application/json'].schema.$ref?.startsWith('#/components/schemas/def-'), true,
    'the host\'s naming (@fastify/swagger\'s default) stays the host\'s')
  const identity = doc.components.schemas[String(doc.paths[`${PREFIX}/profile`].get.responses['200'].content?.['application/json'].schema.$ref).slice('#/components/schemas/'.length)]
  t.ok(identity.properties?.userId, 'the service\'s Identity is the service\'s')
})

t.test('hideFromHostDocument leaves the service out of the host document; the service\'s own keeps every route', async (t) => {
  const host = await hostApp(t, { service: { hideFromHostDocument: true }, exports: true })
  const doc = await hostDocument(t, host)
  t.strictSame(Object.keys(doc.paths), ['/api/me'])
  t.strictSame(Object.keys(doc.components.schemas).sort(), ['ErrorReply', 'Identity'], 'nor the service\'s schemas')
  const plain = await hostApp(t, { service: { hideFromHostDocument: true } })
  const plainDoc = await hostDocument(t, plain)
  t.strictSame(Object.keys(plainDoc.paths), ['/api/me'])
  t.strictSame(Object.values(plainDoc.components.schemas).map(({ title }) => title).sort(), ['ErrorReply', 'Identity'],
    'nor, named by @fastify/swagger\'s default, the service\'s schemas')

  const alone = Fastify()
  t.teardown(() => alone.close())
  await alone.register(serviceApp, { prefix: PREFIX, config: testConfig })
  t.strictSame(await serviceDocument(host), await serviceDocument(alone), 'the service\'s own document is the same as without a host')
})

t.test('the service\'s own document is the same under a host with its own swagger and schemas', async (t) => {
  const host = await hostApp(t, { service: { config: { CATS_IF_MATCH: 'required' } }, exports: true })
  const alone = Fastify()
  t.teardown(() => alone.close())
  await alone.register(serviceApp, { prefix: PREFIX, config: { ...testConfig, CATS_IF_MATCH: 'required' } })
  const own = await serviceDocument(host) as Document
  t.strictSame(own, await serviceDocument(alone))
  t.notOk('ErrorReply' in own.components.schemas, 'the host\'s schemas are not the service\'s')
  t.strictSame(own.paths['/profile'].get.security, [{ bearerAuth: [] }])
})

t.test('Redocly (recommended rules) finds nothing more in the host document with the service than without it', async (t) => {
  const dir = t.testdir({ 'redocly.yaml': 'extends:\n  - recommended\n' })
  const setups: Array<[string, HostSetup]> = [
    ['the host alone', {}],
    ['with the service and the exports', { service: {}, exports: true }],
    ['with the service, nothing passed', { service: {} }],
    ['with the service, CATS_AUTH=required', { service: { config: { CATS_AUTH: 'required' } }, exports: true }],
    ['with the service hidden', { service: { hideFromHostDocument: true } }]
  ]
  const files: string[] = []
  for (const [index, [, setup]] of setups.entries()) {
    const host = await hostApp(t, setup)
    files.push(join(dir, `host-${index}.json`))
    await writeFile(files[index], JSON.stringify(await hostDocument(t, host)))
    await host.close()
  }
  const [alone, ...withService] = await lint(files, join(dir, 'redocly.yaml'))
  const problems = ({ problems }: typeof alone) => problems.map(({ ruleId, message }) => `${ruleId}: ${message}`).sort()
  t.comment(`Redocly findings (errors + warnings): ${[alone, ...withService].map((report, index) => `${setups[index][0]} ${report.totals.errors + report.totals.warnings}`).join('; ')}`)
  for (const [index, report] of withService.entries()) {
    t.strictSame(problems(report), problems(alone), setups[index + 1][0])
    t.ok(report.totals.errors + report.totals.warnings <= alone.totals.errors + alone.totals.warnings, `${setups[index + 1][0]}: no more findings`)
  }
})
