import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, open, readFile, rmdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * One process at a time per directory. The lock is a file created exclusively
 * (O_EXCL) that holds the owner's PID and, on Linux, the boot id and the
 * process's start time. A lock whose owner is gone (exited, crashed, killed
 * with SIGKILL) is stale and taken over at once, so a crash never blocks a
 * restart; the start time keeps a recycled PID (another program, or the next
 * container's PID 1) from passing for the old owner.
 *
 * Not an mtime-refreshed lock (proper-lockfile): PGlite runs queries on the
 * event loop, so a long one could miss a refresh and lose the lock, and a
 * restart after a crash would wait for the lock to turn stale. Node has no
 * flock(2) without a native addon. Processes must share a kernel (one machine
 * and its containers), as PGlite on one directory does anyway.
 */

const LOCK_FILE = 'cats-api.lock'
/** The takeover mutex is held for a few system calls; older than this, it was left by a crash. */
const TAKEOVER_STALE_MS = 10_000
const ATTEMPTS = 20
const RETRY_DELAY_MS = 50

const HAS_PROC = existsSync('/proc/self/stat')
/* c8 ignore next -- systems without /proc */
const BOOT_ID = HAS_PROC ? readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() : ''

export class DirectoryInUseError extends Error {}

/** How a lock file records a running process; undefined when no process has this PID. */
export function processIdentity (pid: number): string | undefined {
  /* c8 ignore next -- systems without /proc: the PID alone */
  if (!HAS_PROC) return isAlive(pid) ? String(pid) : undefined
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // Fields after the command name (which may hold spaces and parentheses); the start time is field 22.
  const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  return `${pid} ${BOOT_ID}:${startTime}`
}

/* c8 ignore start -- used only where /proc is missing */
function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return isCode(error, 'EPERM')
  }
}
/* c8 ignore stop */

function isCode (error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code
}

/** Whether the process recorded in a lock file still runs (the same process, not a recycled PID). */
function ownerRuns (recorded: string): boolean {
  const pid = Number(recorded.split(' ')[0])
  return Number.isSafeInteger(pid) && pid > 0 && processIdentity(pid) === recorded
}

async function readLock (file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch((error: unknown) => {
    if (isCode(error, 'ENOENT')) return undefined
    throw error
  })
}

/** Removes a stale lock unless another process replaced it meanwhile; one process at a time does this. */
async function removeStale (file: string, seen: string): Promise<void> {
  const mutex = `${file}.takeover`
  try {
    await mkdir(mutex)
  } catch (error) {
    /* c8 ignore next -- only EEXIST is expected here */
    if (!isCode(error, 'EEXIST')) throw error
    // Another process is replacing the lock right now, or one crashed doing it long ago.
    if (Date.now() - statSync(mutex).mtimeMs > TAKEOVER_STALE_MS) await rmdir(mutex)
    return
  }
  try {
    if (await readLock(file) === seen) await unlink(file)
  } finally {
    await rmdir(mutex)
  }
}

export interface DirectoryLock {
  release: () => Promise<void>
}

/**
 * Takes the lock of `directory` (created if missing) for this process, or
 * throws DirectoryInUseError naming the process that holds it.
 */
export async function lockDirectory (directory: string): Promise<DirectoryLock> {
  await mkdir(directory, { recursive: true })
  const file = join(directory, LOCK_FILE)
  /* c8 ignore next -- this process always has an identity */
  const identity = processIdentity(process.pid) ?? String(process.pid)
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const handle = await open(file, 'wx').catch((error: unknown) => {
      if (isCode(error, 'EEXIST')) return undefined
      /* c8 ignore next -- e.g. a read-only directory */
      throw error
    })
    if (handle !== undefined) {
      await handle.writeFile(identity)
      await handle.close()
      return {
        release: async () => {
          if (await readLock(file) === identity) await unlink(file)
        }
      }
    }
    const recorded = await readLock(file)
    // An empty file is a lock being written this instant, by a process that runs.
    if (recorded === '' || (recorded !== undefined && ownerRuns(recorded))) {
      const owner = recorded === '' ? 'another process' : `process ${recorded.split(' ')[0]}`
      throw new DirectoryInUseError(`The PGlite directory ${directory} is in use by ${owner}; only one process at a time may open it`)
    }
    if (recorded !== undefined) await removeStale(file, recorded)
    await sleep(attempt === 0 ? 0 : RETRY_DELAY_MS)
  }
  throw new DirectoryInUseError(`The PGlite directory ${directory} is being taken over by another process; retry shortly`)
}
