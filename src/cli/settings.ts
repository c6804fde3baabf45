import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { renderEnvExample, updateSettingsPages } from '../config-docs.js'

// Writes .env.example and the table of settings, in the working directory, from the config schema: the table goes
// between the markers of docs/configuration.md (and of README.md, should it carry them too).
const pages = updateSettingsPages((name) => existsSync(name) ? readFileSync(name, 'utf8') : undefined)
writeFileSync('.env.example', renderEnvExample())
for (const [name, text] of pages) writeFileSync(name, text)
console.log(`Wrote .env.example and the table of settings in ${pages.map(([name]) => name).join(', ')}`)
