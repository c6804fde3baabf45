/**
 * Writes a finished run: bench/results/latest.json (every sample),
 * bench/results/ratios.svg, and the report's tables into BENCHMARKS.md
 * between its results markers.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ratiosSvg, type BenchReport } from './report.js'

// BENCHMARKS.md shows the latest tables between these markers.
const BEGIN = '<!-- bench:results:start -->'
const END = '<!-- bench:results:end -->'

/** Replaces the file at once, so that an interrupted run leaves the previous one whole. */
function write (path: string, content: string): void {
  writeFileSync(`${path}.tmp`, content)
  renameSync(`${path}.tmp`, path)
}

/** `tables` is the markdown printed for the run; returns what was written, for the progress log. */
export function writeResults (root: string, report: BenchReport, tables: string): string {
  const resultsDir = join(root, 'bench', 'results')
  mkdirSync(resultsDir, { recursive: true })
  write(join(resultsDir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
  write(join(resultsDir, 'ratios.svg'), ratiosSvg(report))
  const docPath = join(root, 'BENCHMARKS.md')
  const doc = existsSync(docPath) ? readFileSync(docPath, 'utf8') : ''
  const from = doc.indexOf(BEGIN)
  const to = doc.indexOf(END)
  const documented = from !== -1 && to > from
  if (documented) write(docPath, `${doc.slice(0, from + BEGIN.length)}\n\n${tables}\n${doc.slice(to)}`)
  return `wrote bench/results/latest.json, bench/results/ratios.svg${documented ? ' and the tables in BENCHMARKS.md' : ''}`
}
