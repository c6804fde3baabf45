import { join } from 'node:path'
import madge from 'madge'
import t from 'tap'

const root = join(import.meta.dirname, '..')

// Type-only imports count: a cycle through types is still two modules that cannot be read one before the other.
const options = {
  baseDir: root,
  fileExtensions: ['ts'],
  tsConfig: join(root, 'tsconfig.json'),
  detectiveOptions: { ts: { skipTypeImports: false }, es6: { skipTypeImports: false } }
}

t.test('no import cycle in the service, its plugins, routes and benchmarks', async (t) => {
  const graph = await madge(['src', 'plugins', 'routes', 'bench'].map((folder) => join(root, folder)), options)
  t.ok(Object.keys(graph.obj()).length > 100, 'every module is read')
  t.strictSame(graph.circular(), [], 'each cycle is listed as the modules it goes through')
})

t.test('a cycle would be found: two modules that import each other, type-only imports included', async (t) => {
  const dir = t.testdir({
    'a.ts': "import type { B } from './b.js'\nexport interface A { b?: B }\n",
    'b.ts': "import type { A } from './a.js'\nexport interface B { a?: A }\n"
  })
  const graph = await madge(dir, { ...options, baseDir: dir })
  t.strictSame(graph.circular(), [['a.ts', 'b.ts']])
})
