import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'
import t from 'tap'
import { ConfigSchema, loadConfig } from '../src/config.js'
import { README_END, README_START, renderConfigTable, renderEnvExample, updateReadme } from '../src/config-docs.js'

const root = join(import.meta.dirname, '..')
const SECRET = 'a-test-secret-that-is-32-chars-!'
const STALE = 'out of date: run `npm run settings` and commit the result'

t.test('every setting has a one-line description', async (t) => {
  for (const [name, schema] of Object.entries(ConfigSchema.properties)) {
    t.match(schema.description, /^[^\n]{10,}$/, name)
  }
})

t.test('.env.example is the one generated from the schema', async (t) => {
  t.equal(readFileSync(join(root, '.env.example'), 'utf8'), renderEnvExample(), `.env.example is ${STALE}`)
})

t.test("the README's configuration table is the one generated from the schema", async (t) => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  t.equal(updateReadme(readme), readme, `README.md is ${STALE}`)
  t.ok(readme.includes(`${README_START}\n${renderConfigTable()}\n${README_END}`))
})

t.test('.env.example names every setting, and the defaults it shows are the real ones', async (t) => {
  const example = renderEnvExample()
  // Uncommented, the example is a .env file as the server reads it.
  const values = parseEnv(example.replace(/^# ([A-Z_]+=)/gm, '$1'))
  t.strictSame(Object.keys(values).sort(), Object.keys(ConfigSchema.properties).sort())
  const shown = Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ''))
  t.strictSame(loadConfig({ ...shown, JWT_SECRET: SECRET }), loadConfig({ JWT_SECRET: SECRET }))
  t.match(example, /^JWT_SECRET=$/m, 'the required setting is not commented out')
})

t.test('one row per setting, with its default, "unset", "empty" or "required"', async (t) => {
  const table = renderConfigTable()
  t.equal(table.split('\n').length, 2 + Object.keys(ConfigSchema.properties).length)
  t.match(table, '| `JWT_SECRET` | — (required) | HS256 signing secret, at least 32 characters. |')
  t.match(table, '| `PORT` | `3000` | ')
  t.match(table, '| `REDIS_URL` | unset | ')
  t.match(table, '| `CORS_ORIGINS` | empty | ')
})

t.test('a README without the markers is refused', async (t) => {
  t.throws(() => updateReadme('# No table here\n'), /README.md needs the markers/)
  t.throws(() => updateReadme(`${README_END}\n${README_START}\n`), /README.md needs the markers/)
})
