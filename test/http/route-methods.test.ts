import t from 'tap'
import { RouteMethods } from '../../src/http/route-methods.js'

// The methods of each path, as the service's routes are registered (see the 405s in test/routes/http-semantics.test.ts).

t.test('a path\'s methods are those of every route whose URL it matches, in Allow\'s order', async (t) => {
  const routes = new RouteMethods()
  routes.add({ method: 'GET', url: '/api/cats', prefix: '/api/cats' })
  routes.add({ method: ['POST', 'PROPFIND', 'COPY'], url: '/api/cats', prefix: '/api/cats' })
  routes.add({ method: 'delete', url: '/api/cats/:id', prefix: '/api/cats' })
  routes.add({ method: 'GET', url: '/api/.well-known/jwks.json', prefix: '/api/.well-known' })
  t.strictSame(routes.allowed('/api/cats'), ['GET', 'POST', 'COPY', 'PROPFIND'], 'methods outside the usual ones last, alphabetically')
  t.strictSame(routes.allowed('/api/cats/'), ['GET', 'POST', 'COPY', 'PROPFIND'], 'a prefix\'s root with its slash')
  t.strictSame(routes.allowed('/api/cats/7'), ['DELETE'])
  t.equal(routes.allowed('/api/cats/7/'), undefined)
  t.equal(routes.allowed('/api/cats/7/toys'), undefined)
  t.strictSame(routes.allowed('/api/.well-known/jwks.json'), ['GET'])
  t.equal(routes.allowed('/api/.well-known/jwksXjson'), undefined, 'a dot is a dot')
})

t.test('a root route, a prefix served with its slash only, and routes ending in *', async (t) => {
  const routes = new RouteMethods()
  routes.add({ method: 'GET', url: '/', prefix: '' })
  routes.add({ method: 'GET', url: '/only/', prefix: '/only', prefixTrailingSlash: 'slash' })
  routes.add({ method: 'GET', url: '/bare', prefix: '/bare', prefixTrailingSlash: 'no-slash' })
  routes.add({ method: 'OPTIONS', url: '/*', prefix: '' })
  routes.add({ method: 'GET', url: '/docs/static/*', prefix: '/docs' })
  t.strictSame(routes.allowed('/'), ['GET', 'OPTIONS'])
  t.strictSame(routes.allowed('/only/'), ['GET', 'OPTIONS'])
  t.equal(routes.allowed('/only'), undefined)
  t.equal(routes.allowed('/bare/'), undefined)
  t.equal(routes.allowed('/elsewhere'), undefined, 'a catch-all makes no path known')
  t.equal(routes.allowed('/docs/static/index.css'), undefined)
})
