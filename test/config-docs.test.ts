import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'
import t from 'tap'
import { ConfigSchema, loadConfig } from '../src/config.js'
import { SETTINGS_END, SETTINGS_PAGE, SETTINGS_START, renderConfigTable, renderEnvExample, updateSettingsTable } from '../src/config-docs.js'

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

t.test("the configuration page's table of settings is the one generated from the schema", async (t) => {
  t.equal(SETTINGS_PAGE, 'docs/configuration.md')
  const page = readFileSync(join(root, SETTINGS_PAGE), 'utf8')
  t.equal(updateSettingsTable(page), page, `${SETTINGS_PAGE} is ${STALE}`)
  t.ok(page.includes(`${SETTINGS_START}\n${renderConfigTable()}\n${SETTINGS_END}`))
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
  t.match(table, '| `JWT_SECRET` | — (required with `HS256`) | HS256 secret, at least 32 characters')
  t.match(table, '| `JWT_ALGORITHM` | `HS256` | ')
  t.match(table, '| `PORT` | `3000` | ')
  t.match(table, '| `REDIS_URL` | unset | ')
  t.match(table, '| `CORS_ORIGINS` | empty | ')
})

t.test('a page without the markers is refused, by its name', async (t) => {
  t.throws(() => updateSettingsTable('# No table here\n'), /^docs\/configuration\.md needs the markers/)
  t.throws(() => updateSettingsTable(`${SETTINGS_END}\n${SETTINGS_START}\n`), /^docs\/configuration\.md needs the markers/)
  const current = `# Title\n\n${SETTINGS_START}\n${renderConfigTable()}\n${SETTINGS_END}\n`
  t.equal(updateSettingsTable(`# Title\n\n${SETTINGS_START}\nstale\n${SETTINGS_END}\n`), current)
})
