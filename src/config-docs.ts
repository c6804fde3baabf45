import { ConfigSchema } from './config.js'

/**
 * The settings' documentation, generated from the config schema so that it
 * cannot drift from it: `.env.example` and the table of settings in
 * `docs/configuration.md` (`npm run settings` writes both; a test fails when
 * either is out of date).
 */

/** The markers the table of settings is written between. */
export const SETTINGS_START = '<!-- settings:start -->'
export const SETTINGS_END = '<!-- settings:end -->'

/**
 * The pages, relative to the project root, that `npm run settings` writes the
 * table into when they carry the markers: the configuration page, where the
 * table lives, and the README, should it carry the markers too.
 */
export const SETTINGS_PAGES = ['docs/configuration.md', 'README.md'] as const

/** The page the table of settings lives on. */
export const SETTINGS_PAGE = SETTINGS_PAGES[0]

interface Setting {
  name: string
  description: string
  fallback: unknown
  required: boolean
}

function settings (): Setting[] {
  const required = new Set<string>(ConfigSchema.required)
  return Object.entries(ConfigSchema.properties).map(([name, schema]) => ({
    name,
    description: String(schema.description),
    fallback: schema.default,
    required: required.has(name) && schema.default === undefined
  }))
}

function defaultCell ({ fallback, required }: Setting): string {
  if (fallback === undefined) return required ? '— (required)' : 'unset'
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
    ? `# ${description}. Required.\n${name}=`
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

/** The page (named `name` in the error) with the table between its markers replaced by the current one. */
export function updateSettingsTable (page: string, name: string = SETTINGS_PAGE): string {
  const start = page.indexOf(SETTINGS_START)
  const end = page.indexOf(SETTINGS_END)
  if (start === -1 || end < start) throw new Error(`${name} needs the markers ${SETTINGS_START} and ${SETTINGS_END}`)
  return `${page.slice(0, start + SETTINGS_START.length)}\n${renderConfigTable()}\n${page.slice(end)}`
}

/**
 * What `npm run settings` writes, given how to read a page (`undefined` when
 * there is none): each of `SETTINGS_PAGES` that carries the start marker,
 * by name, with its table updated. Throws when no page carries it.
 */
export function updateSettingsPages (read: (name: string) => string | undefined): Array<[name: string, text: string]> {
  const found = SETTINGS_PAGES.flatMap((name) => {
    const text = read(name)
    return text?.includes(SETTINGS_START) === true ? [[name, text] as const] : []
  })
  if (found.length === 0) throw new Error(`${SETTINGS_PAGE} needs the markers ${SETTINGS_START} and ${SETTINGS_END}`)
  return found.map(([name, text]) => [name, updateSettingsTable(text, name)])
}
