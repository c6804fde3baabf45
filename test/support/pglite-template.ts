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
async function removeAbandonedBuilds (finalDir: string): Promise<void> {
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
 * `finalDir`, made by `fill` unless it exists. It is built beside its final place and renamed into it, so a test
 * process never sees half of one; of processes that build it at once, the first rename wins and the others use
 * the winner's.
 */
async function buildOnce (finalDir: string, fill: (directory: string) => Promise<void>): Promise<string> {
  if (existsSync(finalDir)) return finalDir
  await mkdir(cacheDir, { recursive: true })
  await removeAbandonedBuilds(finalDir)
  const building = await mkdtemp(`${finalDir}.building-`)
  try {
    await fill(building)
    await rename(building, finalDir)
  } catch (error) {
    await rm(building, { recursive: true, force: true })
    // ENOTEMPTY or EEXIST: another process renamed its build into place first.
    if (!existsSync(finalDir)) throw error
  }
  return finalDir
}

/** The template's path: an empty, initialised PGlite database, made on first use. */
export function pgliteTemplate (): Promise<string> {
  made ??= buildOnce(templateDir, async (directory) => {
    const db = new PGlite(directory)
    await db.waitReady
    await db.close()
  })
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
  return privateCopy(t, pgliteTemplate())
}

async function privateCopy (t: Test, template: Promise<string>): Promise<string> {
  const directory = mkdtempSync(join(copiesDir, 'cats-pglite-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  cpSync(await template, directory, { recursive: true, mode: constants.COPYFILE_FICLONE })
  return directory
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
    return await buildOnce(`${templateDir}-migrated-${hash.digest('hex').slice(0, 16)}`, async (directory) => {
      await copyPgliteTemplate(directory)
      const client = await pgliteClient(directory)
      await migrate(client)
      await client.close()
    })
  })()
  return migratedMade
}

/** As pgliteCopy, a private copy removed on `t`'s teardown, of the migrated template. */
export function pgliteMigratedCopy (t: Test): Promise<string> {
  return privateCopy(t, pgliteMigratedTemplate())
}
