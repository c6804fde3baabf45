import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import Fastify from 'fastify'
import serviceApp from '../../../src/app.js'
import type { ConfigInput } from '../../../src/config.js'
import { testConfig } from '../../support/app.js'
import { lint } from '../../support/redocly.js'

/** The document exactly as a client downloads it from /docs/json. */
async function documentOf (config: Partial<ConfigInput>, prefix?: string): Promise<unknown> {
  const app = Fastify()
  try {
    await app.register(serviceApp, { prefix, config: { ...testConfig, ...config } })
    const res = await app.inject(`${prefix ?? ''}/docs/json`)
    return res.json()
  } finally {
    await app.close()
  }
}

const setups: Array<[string, Partial<ConfigInput>, string | undefined]> = [
  ['standalone', {}, undefined],
  ['CATS_AUTH=required', { CATS_AUTH: 'required' }, undefined],
  ['under the prefix /api', {}, '/api']
]

// One run of the CLI for the three documents.
const dir = t.testdir()
const files = await Promise.all(setups.map(async ([, config, prefix], index) => {
  const file = join(dir, `openapi-${index}.json`)
  await writeFile(file, JSON.stringify(await documentOf(config, prefix)))
  return file
}))
const reports = await lint(files)
t.equal(reports.length, setups.length, 'one report per document')

for (const [index, [name]] of setups.entries()) {
  t.test(`@redocly/cli lint (recommended rules, redocly.yaml): no errors or warnings, ${name}`, async (t) => {
    const report = reports[index]
    t.strictSame(report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`), [])
    t.strictSame(report.totals, { errors: 0, warnings: 0, ignored: 0 })
  })
}
