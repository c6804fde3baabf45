import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { renderConfigTable, renderEnvExample } from '../../src/config-docs.js'
import { runCli } from '../support/cli.js'

t.test('npm run settings rewrites .env.example and the table of docs/configuration.md in its working directory', async (t) => {
  const dir = t.testdir({ docs: { 'configuration.md': '# Title\n\n<!-- settings:start -->\nstale\n<!-- settings:end -->\n\nAfter.\n' } })
  const { code, stdout } = await runCli('settings.js', [], '', {}, dir)
  t.equal(code, 0)
  t.match(stdout, /Wrote \.env\.example/)
  t.equal(readFileSync(join(dir, '.env.example'), 'utf8'), renderEnvExample())
  t.equal(readFileSync(join(dir, 'docs', 'configuration.md'), 'utf8'), `# Title\n\n<!-- settings:start -->\n${renderConfigTable()}\n<!-- settings:end -->\n\nAfter.\n`)
})
