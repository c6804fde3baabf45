import { readFileSync, writeFileSync } from 'node:fs'
import { renderEnvExample, updateReadme } from '../config-docs.js'

// Writes .env.example and the README's configuration table, in the working directory, from the config schema.
writeFileSync('.env.example', renderEnvExample())
writeFileSync('README.md', updateReadme(readFileSync('README.md', 'utf8')))
console.log('Wrote .env.example and the configuration table of README.md')
