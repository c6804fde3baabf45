import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import Fastify from 'fastify'
import serviceApp from '../../../src/app.js'
import type { ConfigInput } from '../../../src/config.js'
import { testConfig } from '../../support/app.js'

const root = join(import.meta.dirname, '..', '..', '..')
const redocly = join(root, 'node_modules', '.bin', 'redocly')

interface LintReport {
  totals: { errors: number, warnings: number, ignored: number }
  problems: Array<{ ruleId: string, message: string }>
}

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

for (const [name, config, prefix] of setups) {
  t.test(`@redocly/cli lint (recommended rules, redocly.yaml): no errors or warnings, ${name}`, async (t) => {
    const file = join(t.testdir(), 'openapi.json')
    await writeFile(file, JSON.stringify(await documentOf(config, prefix)))
    // Telemetry and the update check are off: the test talks to no one.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
    const { stdout } = await promisify(execFile)(redocly, ['lint', '--config', join(root, 'redocly.yaml'), '--format', 'json', file], {
      env, timeout: 120_000
    })
    const report = JSON.parse(stdout) as LintReport
    t.strictSame(report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`), [])
    t.strictSame(report.totals, { errors: 0, warnings: 0, ignored: 0 })
  })
}
