import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { loadConfig } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { bearer, logCapture, tokenFor, testConfig, TEST_SECRET, unencapsulatedApp } from '../support/app.js'

// Request ids and what the logs hold: the id in every line of a request, 5xx errors logged, secrets never.

interface Captured {
  app: FastifyInstance
  logs: () => string
}

async function withCapturedLogs (t: Test, extra: Record<string, string | number> = {}): Promise<Captured> {
  const { stream, text: logged } = logCapture()
  const config = loadConfig({ ...testConfig, LOG_LEVEL: 'trace', ...extra })
  const app = Fastify(serverOptions(config, stream))
  await app.register(unencapsulatedApp, {
    config,
    validateToken: (claims) => {
      if (claims.username === 'crash') throw new Error('lookup failed')
      return { userId: claims.sub, username: claims.username }
    }
  })
  await app.ready()
  t.teardown(() => app.close())
  return { app, logs: () => logged() }
}

const CLIENT_REQUEST_ID = '7D3F0C1E-58B2-4C8A-9E61-2F4B7A9C0D13'

t.test('request ids: a client x-request-id that is a UUID is kept, echoed and in every log line of the request', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const res = await app.inject({ url: '/cats', headers: { 'x-request-id': CLIENT_REQUEST_ID } })
  t.equal(res.headers['x-request-id'], CLIENT_REQUEST_ID)
  const lines = logs().trim().split('\n').map((line) => JSON.parse(line)).filter((entry) => entry.reqId !== undefined)
  t.ok(lines.length >= 2, 'incoming and completed lines')
  t.ok(lines.every((entry) => entry.reqId === CLIENT_REQUEST_ID))
})

t.test('request ids: any other or missing x-request-id is replaced by a new UUID', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
  const others = ['client-abc.123', 'bad id with spaces', 'x'.repeat(200), `${CLIENT_REQUEST_ID}0`]
  for (const headers of [{}, ...others.map((id) => ({ 'x-request-id': id }))]) {
    const res = await app.inject({ url: '/cats', headers })
    t.match(res.headers['x-request-id'], uuid)
  }
  for (const id of others) t.notOk(logs().includes(id), `${id.slice(0, 20)} is not logged`)
})

t.test('errors and logs: a 5xx is logged with its request id and answered generically', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const token = tokenFor(app, 1, 'crash')
  const res = await app.inject({ url: '/profile', headers: { ...bearer(token), 'x-request-id': CLIENT_REQUEST_ID } })
  t.equal(res.statusCode, 500)
  t.equal(res.json().message, 'An internal error occurred')
  const errorLine = logs().trim().split('\n').map((line) => JSON.parse(line)).find((entry) => entry.level === 50)
  t.equal(errorLine?.reqId, CLIENT_REQUEST_ID)
  t.equal(errorLine?.err?.message, 'lookup failed')
})

t.test('errors and logs: secrets never appear in the logs', async (t) => {
  const { app, logs } = await withCapturedLogs(t)
  const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })
  const token: string = res.json().access_token
  await app.inject({ url: '/profile', headers: bearer(token) })
  await app.inject({ url: '/profile', headers: bearer('forged.token.value') })
  await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'hunter2-wrong' } })
  app.log.info({ body: { password: 'logged-by-mistake' }, user: { access_token: token } }, 'redaction check')
  const text = logs()
  t.ok(text.length > 0)
  for (const secret of [TEST_SECRET, 'changeme', 'hunter2-wrong', 'logged-by-mistake', token, 'forged.token.value']) {
    t.notOk(text.includes(secret), `the log does not contain ${secret.slice(0, 12)}…`)
  }
  t.match(text, /\[redacted\]/, 'redacted fields are marked')
})
