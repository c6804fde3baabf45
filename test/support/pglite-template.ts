import { createHash } from 'node:crypto'
import { constants, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, statSync, statfsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import type { Test } from 'tap'
import { pgliteClient } from '../../src/db/sql-client.js'
import { migrate } from '../../src/db/migrations.js'

/**
 * A PGlite database made from nothing runs initdb in WASM, seconds of CPU each
 * time; opening a data directory that is already initialised takes about one.
 * So an initialised, empty data directory is made once per machine and PGlite
 * version (in node_modules/.cache), and tests that only need some empty PGlite
 * get a private copy of it. A few tests still create databases from nothing
 * the product's own way (pglite://memory, a new empty directory), so that path
 * stays tested.
 */

const root = join(import.meta.dirname, '..', '..')
const pgliteVersion: string = JSON.parse(readFileSync(join(root, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')).version
const cacheDir = join(root, 'node_modules', '.cache', 'cats-auth-service-tests')
const templateDir = join(cacheDir, `pglite-${pgliteVersion}`)

let made: Promise<string> | undefined

/** Builds left by processes killed while building (one takes seconds): older than ten minutes, nobody finishes them. */
async function removeAbandonedBuilds (finalDir = templateDir): Promise<void> {
  const prefix = `${basename(finalDir)}.building-`
  for (const entry of await readdir(cacheDir)) {
    if (!entry.startsWith(prefix)) continue
    const path = join(cacheDir, entry)
    // Gone already when another process removed it meanwhile.
    const modified = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()
    if (Date.now() - modified > 600_000) await rm(path, { recursive: true, force: true })
  }
}

/**
 * The template's path, made on first use. It is built beside its final place and
 * renamed into it, so a test process never sees half of one; of processes that
 * build it at once, the first rename wins and the others use the winner's.
 */
export function pgliteTemplate (): Promise<string> {
  made ??= (async () => {
    if (existsSync(templateDir)) return templateDir
    await mkdir(cacheDir, { recursive: true })
    await removeAbandonedBuilds()
    const building = await mkdtemp(`${templateDir}.building-`)
    try {
      const db = new PGlite(building)
      await db.waitReady
      await db.close()
      await rename(building, templateDir)
    } catch (error) {
      await rm(building, { recursive: true, force: true })
      // ENOTEMPTY or EEXIST: another process renamed its template into place first.
      if (!existsSync(templateDir)) throw error
    }
    return templateDir
  })()
  return made
}

/** Copies the template into `directory` (created if missing, expected empty). */
export async function copyPgliteTemplate (directory: string): Promise<string> {
  cpSync(await pgliteTemplate(), directory, { recursive: true, mode: constants.COPYFILE_FICLONE })
  return directory
}

/**
 * Where copies go: memory (tmpfs) where there is one with a GiB free (a copy is about 40 MB). The service opens a
 * directory with fsync on, and on a disk shared with other test processes the
 * fsync of every commit would take longer than the statements themselves.
 */
const copiesDir = roomFor('/dev/shm', 1024 ** 3) ? '/dev/shm' : tmpdir()

/** Whether `directory` exists with `bytes` free: a container's /dev/shm is often 64 MB, less than a few copies. */
function roomFor (directory: string, bytes: number): boolean {
  if (!existsSync(directory)) return false
  const { bavail, bsize } = statfsSync(directory)
  return bavail * bsize >= bytes
}

/**
 * A private copy of the template in a new temporary directory, removed on `t`'s
 * teardown. The removal is registered before this returns: teardowns run last
 * first, so whatever is opened on the copy afterwards is closed before it goes.
 */
export function pgliteCopy (t: Test): Promise<string> {
  const directory = mkdtempSync(join(copiesDir, 'cats-pglite-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  return copyPgliteTemplate(directory)
}

let migratedMade: Promise<string> | undefined

/**
 * A second template: the empty one with every migration of src/db/migrations applied by the service, for tests of
 * what the service does on a database rather than of migrating one. Named after the migrations' contents, their
 * runner and postgrator's version, so a change to any of them makes a new one; built and renamed into place as the empty template is.
 */
export function pgliteMigratedTemplate (): Promise<string> {
  migratedMade ??= (async () => {
    const migrations = join(root, 'src', 'db', 'migrations')
    const hash = createHash('sha256')
    for (const name of readdirSync(migrations).sort()) hash.update(`${name}\0`).update(readFileSync(join(migrations, name)))
    hash.update(readFileSync(join(root, 'src', 'db', 'migrations.ts'))).update(readFileSync(join(root, 'node_modules', 'postgrator', 'package.json')))
    const migratedDir = `${templateDir}-migrated-${hash.digest('hex').slice(0, 16)}`
    if (existsSync(migratedDir)) return migratedDir
    await pgliteTemplate()
    await removeAbandonedBuilds(migratedDir)
    const building = await mkdtemp(`${migratedDir}.building-`)
    try {
      await copyPgliteTemplate(building)
      const client = await pgliteClient(building)
      await migrate(client)
      await client.close()
      await rename(building, migratedDir)
    } catch (error) {
      await rm(building, { recursive: true, force: true })
      // ENOTEMPTY or EEXIST: another process renamed its template into place first.
      if (!existsSync(migratedDir)) throw error
    }
    return migratedDir
  })()
  return migratedMade
}

/** As pgliteCopy, a private copy removed on `t`'s teardown, of the migrated template. */
export async function pgliteMigratedCopy (t: Test): Promise<string> {
  const directory = mkdtempSync(join(copiesDir, 'cats-pglite-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  cpSync(await pgliteMigratedTemplate(), directory, { recursive: true, mode: constants.COPYFILE_FICLONE })
  return directory
}
