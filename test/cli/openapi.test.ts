import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runCli } from '../support/cli.js'

t.test('npm run openapi writes the OpenAPI document to a file', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'openapi.json')
  const { code } = await runCli('openapi.js', [file], '')
  t.equal(code, 0)
  const doc = JSON.parse(readFileSync(file, 'utf8'))
  t.equal(doc.openapi, '3.1.0')
  t.ok(doc.paths['/cats/{id}'])
})
