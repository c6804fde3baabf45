import t from 'tap'
import Fastify from 'fastify'
import { decorateService, serviceDecorator } from '../src/service-scope.js'

t.test('a decorator of the service is read once decorated, and a read before that says which is missing', async (t) => {
  const scope = Fastify()
  t.throws(() => serviceDecorator(scope, 'catsDependencies'), /the service's catsDependencies is not decorated yet/)
  const dependencies = new Map()
  decorateService(scope, 'catsDependencies', dependencies)
  t.equal(serviceDecorator(scope, 'catsDependencies'), dependencies, 'the very value, not a copy or a bound function')
  await scope.close()
})
