import { readFileSync } from 'node:fs'

/** Resident set size of a process of this machine, bytes (from /proc). */
export function rssBytes (pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024
}
