import { randomBytes } from 'node:crypto'
import { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import t from 'tap'
import { loadConfig } from '../../src/config.js'
import { requestForLog, serverOptions, urlForLog } from '../../src/http/server-options.js'
import { testConfig } from '../support/app.js'
import { cheapUsersFile, fetchKeepAlive, startServer } from '../support/server.js'

t.test('urlForLog replaces the query string and keeps the path', async (t) => {
  t.equal(urlForLog('/cats/1'), '/cats/1')
  t.equal(urlForLog('/cats?limit=2&access_token=abc'), '/cats?[redacted]')
  t.equal(urlForLog('/profile?eyJhbGciOi.x.y'), '/profile?[redacted]')
  t.equal(urlForLog('/?'), '/?[redacted]')
  t.equal(urlForLog(undefined), '')
})

t.test('a raw Node request is serialized alike, its query string redacted', async (t) => {
  const raw = new IncomingMessage(new Socket())
  raw.method = 'GET'
  raw.url = '/cats?token=secret-value'
  raw.headers = { host: 'example.test', authorization: 'Bearer secret-value' }
  const logged = requestForLog(raw)
  t.strictSame(logged, { method: 'GET', url: '/cats?[redacted]', host: 'example.test', remoteAddress: undefined, remotePort: undefined })
})

t.test("Fastify's per-request lines are built only at a level that writes them (info and below)", async (t) => {
  const disabled = (level: string): boolean | undefined => {
    const option = serverOptions(loadConfig({ ...testConfig, LOG_LEVEL: level })).logController?.disableRequestLogging
    return typeof option === 'boolean' ? option : undefined
  }
  t.strictSame(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].map(disabled), [false, false, false, true, true, true, true])
})

// No token, password or refresh token in any log line: every place a client can put one, through the compiled server's own logger.
for (const level of ['trace', 'info']) {
  t.test(`no token, password or refresh token in the server's log at LOG_LEVEL=${level}`, async (t) => {
    // The logins need no costly hashes, and fetch leaves no idle connection for the drain after SIGTERM to wait for.
    // Without the reuse window, so that presenting the rotated refresh token again is a reuse.
    const server = await startServer({ LOG_LEVEL: level, REFRESH_TOKENS: 'true', REFRESH_REUSE_WINDOW: '0', USERS_FILE: await cheapUsersFile(t), ...fetchKeepAlive.none })
    t.teardown(() => { server.child.kill('SIGKILL') })
    const { base } = server
    const password = 'changeme' // john's demo password: the login below succeeds
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'john', password })
    })
    t.equal(login.status, 200)
    const loginBody: unknown = await login.json()
    const field = (body: unknown, name: string): string => typeof body === 'object' && body !== null && name in body ? String(Reflect.get(body, name)) : ''
    const token = field(loginBody, 'access_token')
    t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/)
    const issuedRefreshToken = field(loginBody, 'refresh_token')
    t.match(issuedRefreshToken, /^[\w-]+\.[0-9]+\.[0-9]+\.[\w-]+\.[\w-]{43}$/)
    const json = { 'content-type': 'application/json' }
    // A second session, ended by the logout below.
    const second = await fetch(`${base}/auth/login`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'john', password }) })
    const secondToken = field(await second.json(), 'access_token')
    const refreshToken = randomBytes(32).toString('base64url')
    // The MAC is the refresh token's secret part: the rest names a session, as an access token's sid does.
    const secrets = { token, password, refreshToken, issuedRefreshToken, issuedRefreshMac: issuedRefreshToken.split('.').at(-1) ?? '', secondToken }

    const requests: Array<[string, RequestInit]> = [
      ['/profile', { headers: { authorization: `Bearer ${token}` } }],
      ['/profile', { headers: { authorization: `Bearer ${refreshToken}` } }],
      [`/cats?access_token=${token}&password=${password}&refresh_token=${refreshToken}`, {}],
      [`/profile?${token}`, {}],
      [`/no-such-route?token=${token}&${refreshToken}`, {}],
      ['/auth/login', { method: 'POST', headers: json, body: JSON.stringify({ username: 'john', password: refreshToken }) }],
      ['/cats', { method: 'POST', headers: json, body: JSON.stringify({ name: token, age: 1, breed: refreshToken, password }) }],
      ['/cats', { method: 'POST', headers: json, body: JSON.stringify({ name: token, age: password, breed: refreshToken }) }],
      ['/cats', { method: 'POST', headers: json, body: `{"password":"${password}","token":"${token}` }],
      ['/cats/1', { method: 'PUT', headers: json, body: JSON.stringify({ refresh_token: refreshToken, access_token: token }) }],
      ['/cats', { headers: { cookie: `token=${token}; refresh_token=${refreshToken}; password=${password}` } }],
      ['/cats', { headers: { 'x-request-id': token } }],
      ['/cats', { headers: { 'x-request-id': refreshToken } }],
      ['/cats', { headers: { 'x-request-id': password } }],
      ['/auth/refresh', { method: 'POST', headers: json, body: JSON.stringify({ refresh_token: issuedRefreshToken }) }],
      ['/auth/refresh', { method: 'POST', headers: json, body: JSON.stringify({ refresh_token: issuedRefreshToken }) }],
      [`/auth/refresh?refresh_token=${refreshToken}`, { method: 'POST', headers: json, body: JSON.stringify({ refresh_token: refreshToken }) }],
      ['/auth/refresh', { method: 'POST', headers: json, body: `{"refresh_token":"${issuedRefreshToken}` }],
      ['/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${secondToken}` } }],
      ['/auth/logout', { method: 'POST', headers: { authorization: `Bearer ${secondToken}` } }],
      ['/profile', { headers: { authorization: `Bearer ${secondToken}` } }]
    ]
    const statuses: number[] = []
    for (const [path, init] of requests) {
      const response = await fetch(`${base}${path}`, init)
      await response.arrayBuffer()
      statuses.push(response.status)
    }
    t.strictSame(statuses, [200, 401, 200, 401, 404, 401, 201, 400, 400, 200, 200, 200, 200, 200, 200, 401, 401, 400, 204, 401, 401], 'every request was answered')

    server.child.kill('SIGTERM')
    await new Promise((resolve) => server.child.once('exit', resolve))
    const log = server.output()
    const lines = log.trim().split('\n')
    t.ok(lines.length > requests.length * 2, `the server logged (${lines.length} lines)`)
    t.match(log, /"url":"\/cats\?\[redacted\]"/, 'a query string is shown as redacted')
    t.match(log, /"reqId":"[0-9a-f-]{36}"/, 'request lines carry the request id')
    for (const [name, value] of Object.entries(secrets)) {
      t.notOk(log.includes(value), `the ${name} appears in no log line`)
    }
  })
}
