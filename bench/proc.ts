import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, nearly always 100). */
export const CLOCK_TICKS = readClockTicks()

function readClockTicks (): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())
    return Number.isInteger(ticks) && ticks > 0 ? ticks : 100
  } catch {
    return 100
  }
}

/** utime + stime of a process (all its threads), in seconds, from its own accounting in /proc. */
export function cpuSeconds (pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state), so utime (14) and stime (15) are at 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

/**
 * utime + stime of each PostgreSQL backend by PID, or undefined when one of them is not a postgres process of this
 * machine (a server elsewhere, or in another PID namespace).
 */
export function postgresCpuSeconds (pids: number[]): Map<number, number> | undefined {
  const seconds = new Map<number, number>()
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8') !== 'postgres\n') return undefined
      seconds.set(pid, cpuSeconds(pid))
    } catch {
      // A backend that has just ended counts as absent.
    }
  }
  return seconds
}

/** CPU seconds all processes on the machine spent busy (not idle, not waiting for I/O) since boot, from /proc/stat. */
export function machineBusySeconds (): number {
  // First line: cpu user nice system idle iowait irq softirq steal …
  const total = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]
  const [user, nice, system, , , irq, softirq, steal] = total.trim().split(/\s+/).slice(1).map(Number)
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
}

/** CPU seconds this process (the load generator) has used, all threads. */
export function ownCpuSeconds (): number {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1e6
}

export interface Memory {
  /** Resident set size now, bytes. */
  rss: number
  /** Peak resident set size (VmHWM), bytes. */
  peakRss: number
}

export function memory (pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (key: string): number => {
    const match = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)
    return match === null ? 0 : Number(match[1]) * 1024
  }
  return { rss: kib('VmRSS'), peakRss: kib('VmHWM') }
}

/** Whether `taskset` can pin processes here (it may be missing or forbidden in a container). */
export function tasksetWorks (): boolean {
  if (os.cpus().length < 2) return false
  const probe = spawnSync('taskset', ['-c', '0', 'true'])
  return probe.error === undefined && probe.status === 0
}

/** Pins every thread of a running process to one CPU. */
export function pinProcess (pid: number, cpu: number): boolean {
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)])
  return result.error === undefined && result.status === 0
}

export interface MachineInfo {
  cpuModel: string
  cpus: number
  memoryGiB: number
  node: string
  v8: string
  platform: string
  kernel: string
}

export function machineInfo (): MachineInfo {
  const cpus = os.cpus()
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpus: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30 * 10) / 10,
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release()
  }
}
