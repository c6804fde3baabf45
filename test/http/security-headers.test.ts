import t from 'tap'
import { build } from '../support/app.js'

// The security headers of API responses and of the /docs UI, and CORS.

t.test('headers: the API security headers on every response, no X-Powered-By', async (t) => {
  const app = await build(t)
  for (const url of ['/cats', '/nope', '/profile', '/health']) {
    const res = await app.inject(url)
    t.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", url)
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'DENY', url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.equal(res.headers['cross-origin-resource-policy'], 'same-origin', url)
    t.match(res.headers['strict-transport-security'], /^max-age=\d+; includeSubDomains$/, url)
    t.equal(res.headers['x-powered-by'], undefined, url)
  }
})

t.test('headers: the /docs UI works under the CSP (only same-origin scripts, no inline code)', async (t) => {
  const app = await build(t)
  const page = await app.inject('/docs/')
  t.equal(page.statusCode, 200)
  const csp = String(page.headers['content-security-policy'])
  t.match(csp, /default-src 'self'/, 'the UI has its own policy')
  t.match(csp, /script-src 'self'/)
  t.equal(page.headers['x-frame-options'], 'DENY', 'the other headers stay')
  const scripts = [...page.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
  t.ok(scripts.length > 0)
  for (const [, attributes, code] of scripts) {
    t.match(attributes, /src="\.\/[^"]+"/, 'script is loaded from the same origin')
    t.equal(code.trim(), '', 'no inline script for the CSP to block')
  }
  for (const [, src] of page.body.matchAll(/src="\.\/([^"]+)"/g)) {
    t.equal((await app.inject(`/docs/${src}`)).statusCode, 200, src)
  }
})

t.test('CORS: off by default, configured origins only', async (t) => {
  const closed = await build(t)
  const preflight = { method: 'OPTIONS' as const, url: '/cats', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } }
  t.equal((await closed.inject(preflight)).headers['access-control-allow-origin'], undefined)
  const open = await build(t, { CORS_ORIGINS: 'https://app.example, https://admin.example' })
  const allowed = await open.inject(preflight)
  t.equal(allowed.statusCode, 204)
  t.equal(allowed.headers['access-control-allow-origin'], 'https://app.example')
  const other = await open.inject({ ...preflight, headers: { ...preflight.headers, origin: 'https://evil.example' } })
  t.equal(other.headers['access-control-allow-origin'], undefined)
  const patch = await open.inject({ method: 'OPTIONS', url: '/cats/1', headers: { origin: 'https://app.example', 'access-control-request-method': 'PATCH' } })
  t.match(patch.headers['access-control-allow-methods'], /\bPATCH\b/, 'a browser may send PATCH')
  const read = await open.inject({ url: '/cats', headers: { origin: 'https://app.example' } })
  t.equal(read.headers['access-control-expose-headers'], 'ETag, Link', 'and read the ETag for If-Match and the Link to the next page')
})
