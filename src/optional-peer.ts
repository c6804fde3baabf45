/**
 * The clients of PostgreSQL (pg), PGlite (@electric-sql/pglite), Redis (ioredis) and Prometheus (prom-client)
 * are optional peer dependencies: a host installs only those of the settings it turns on, and the service
 * imports each only then, through `importOptionalPeer`. One missing while its setting is on stops the start
 * with what to install, instead of a module-resolution error from deep inside the start.
 */

/** A setting is on whose optional peer is not installed: the message names both and what to install. */
export class MissingOptionalPeer extends Error {
  constructor (name: string, reason: string, install: string, options: ErrorOptions) {
    super(`${reason}, so the ${name} package is required: npm install ${install}`, options)
    this.name = 'MissingOptionalPeer'
  }
}

/** Whether Node finds `name` from here, as the service's own imports would. */
function installed (name: string): boolean {
  try {
    import.meta.resolve(name)
    return true
  } catch {
    return false
  }
}

/**
 * `load()`, which imports the optional peer `name` (or a module of the service that imports it); `reason`
 * says which setting needs it, as in `DATABASE_URL is set`. When the load fails because the package is not
 * installed, the error says so and what to install: `install`, the name unless only one version will do
 * (npm installs the latest, and refuses it when the peer range of package.json excludes it).
 * Any other failure is thrown as it is.
 */
export async function importOptionalPeer<Module> (name: string, reason: string, load: () => Promise<Module>, install = name): Promise<Module> {
  try {
    return await load()
  } catch (error) {
    if (installed(name)) throw error
    throw new MissingOptionalPeer(name, reason, install, { cause: error })
  }
}
