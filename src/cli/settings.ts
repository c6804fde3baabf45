import { readFileSync, writeFileSync } from 'node:fs'
import { SETTINGS_PAGE, renderEnvExample, updateSettingsTable } from '../config-docs.js'

// Writes .env.example and the table of settings of docs/configuration.md, in the working directory, from the config schema.
writeFileSync('.env.example', renderEnvExample())
writeFileSync(SETTINGS_PAGE, updateSettingsTable(readFileSync(SETTINGS_PAGE, 'utf8')))
console.log(`Wrote .env.example and the table of settings in ${SETTINGS_PAGE}`)
