import { ConfigSchema, HS256_NEEDS_SECRET } from './config.js'
import { markers, replaceTable } from './docs-table.js'

/**
 * The settings' documentation, generated from the config schema so that it
 * cannot drift from it: `.env.example` and the table of settings in
 * `docs/configuration.md` (`npm run settings` writes both; a test fails when
 * either is out of date).
 */

/** The markers the table of settings is written between. */
export const { start: SETTINGS_START, end: SETTINGS_END } = markers('settings')

/** The page, relative to the project root, the table of settings lives on. */
export const SETTINGS_PAGE = 'docs/configuration.md'

interface Setting {
  name: string
  description: string
  fallback: unknown
  /** Required with the default algorithm, HS256 (JWT_SECRET); no setting is required whatever the algorithm. */
  required: boolean
}

function settings (): Setting[] {
  const required = new Set<string>(HS256_NEEDS_SECRET.then.required)
  return Object.entries(ConfigSchema.properties).map(([name, schema]) => ({
    name,
    description: String(schema.description),
    fallback: schema.default,
    required: required.has(name)
  }))
}

function defaultCell ({ fallback, required }: Setting): string {
  if (required) return '— (required with `HS256`)'
  if (fallback === undefined) return 'unset'
  return fallback === '' ? 'empty' : `\`${String(fallback)}\``
}

/** The table of settings, one row each. */
export function renderConfigTable (): string {
  const rows = settings().map((setting) =>
    `| \`${setting.name}\` | ${defaultCell(setting)} | ${setting.description.replaceAll('|', '\\|')}. |`)
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}

/** `.env.example`: every setting with its meaning; each optional one commented out at its default. */
export function renderEnvExample (): string {
  const blocks = settings().map(({ name, description, fallback, required }) => required
    ? `# ${description}. Required with HS256, the default algorithm.\n${name}=`
    : `# ${description}.\n# ${name}=${fallback === undefined ? '' : String(fallback)}`)
  return [
    '# Every setting of the cats API, generated from src/config.ts by `npm run settings`: do not edit by hand.',
    '# Copy to .env: `npm start` reads it from the working directory when present, and variables set in the',
    '# environment win over it. Commented lines show the default.',
    '',
    blocks.join('\n\n'),
    ''
  ].join('\n')
}

/** The page with the table between its markers replaced by the current one. */
export function updateSettingsTable (page: string): string {
  return replaceTable(page, SETTINGS_PAGE, 'settings', renderConfigTable())
}
