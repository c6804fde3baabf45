/**
 * A password worker thread: checks one password at a time for PasswordWorkers.
 *
 * It runs below normal CPU priority (nice 10), so when hashes and requests want
 * the same CPU, the event loop gets about nine tenths of it: a flood of logins
 * slows logins, not every other request. Not the lowest priority: that would
 * starve logins whenever anything else on the host is busy. On Linux a thread's
 * nice value is its own; on other systems it is the whole process's, so there
 * the worker keeps the normal priority.
 */
import { constants, setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import { checkPassword } from './password.js'
import type { PasswordCheck, PasswordCheckResult } from './password-workers.js'

if (process.platform === 'linux') setPriority(constants.priority.PRIORITY_BELOW_NORMAL)

parentPort?.on('message', ({ id, password, encoded }: PasswordCheck) => {
  const result: PasswordCheckResult = { id, matches: checkPassword(password, encoded) }
  parentPort?.postMessage(result)
})
