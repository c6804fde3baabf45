import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** The parts of a V8 .cpuprofile (written by `node --cpu-prof`) that the summary reads. */
interface ProfileNode {
  id: number
  callFrame: { functionName: string, url: string, lineNumber: number }
}

interface CpuProfile {
  nodes: ProfileNode[]
  /** Node id of each sample, and microseconds since the previous sample. */
  samples: number[]
  timeDeltas: number[]
}

function isProfile (value: unknown): value is CpuProfile {
  return typeof value === 'object' && value !== null && 'nodes' in value && Array.isArray(value.nodes) &&
    'samples' in value && Array.isArray(value.samples) && 'timeDeltas' in value && Array.isArray(value.timeDeltas)
}

/** Samples per node id, leaving out the first `skipMs` of the profile (start-up, prefill, warm-up). */
function countSamples (profile: CpuProfile, skipMs: number): Map<number, number> {
  const counts = new Map<number, number>()
  let elapsed = 0
  profile.samples.forEach((id, index) => {
    elapsed += profile.timeDeltas[index] ?? 0
    if (elapsed >= skipMs * 1000) counts.set(id, (counts.get(id) ?? 0) + 1)
  })
  return counts
}

/** Where a function lives: a package, a Node.js internal module, a project file, or V8 itself. */
function areaOf (url: string, functionName: string): string {
  if (url === '') return functionName === '(garbage collector)' ? 'V8 garbage collector' : `V8 ${functionName}`
  if (url.startsWith('node:')) return url
  const inModules = url.lastIndexOf('/node_modules/')
  if (inModules !== -1) {
    const [scope, name] = url.slice(inModules + '/node_modules/'.length).split('/')
    return scope.startsWith('@') ? `${scope}/${name}` : scope
  }
  const inDist = url.indexOf('/dist/')
  return inDist === -1 ? url : `project ${url.slice(inDist + 1)}`
}

const line = (share: number, name: string): string => `  ${(share * 100).toFixed(1).padStart(5)}%  ${name}`

/**
 * Top self-time functions and self time per area, as text, for every profile
 * in `dir`, from `skipMs` after the start of each profile on.
 */
export function summarizeProfiles (dir: string, skipMs = 0, top = 20): string {
  const selfTime = new Map<string, number>()
  const areas = new Map<string, number>()
  let total = 0
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile: unknown = JSON.parse(readFileSync(join(dir, file), 'utf8'))
    if (!isProfile(profile)) continue
    const counts = countSamples(profile, skipMs)
    for (const node of profile.nodes) {
      const { functionName, url, lineNumber } = node.callFrame
      const hits = counts.get(node.id) ?? 0
      if (functionName === '(idle)' || hits === 0) continue
      const area = areaOf(url, functionName)
      const key = `${functionName || '(anonymous)'}  ${area}${url === '' ? '' : `:${lineNumber + 1}`}`
      selfTime.set(key, (selfTime.get(key) ?? 0) + hits)
      areas.set(area, (areas.get(area) ?? 0) + hits)
      total += hits
    }
  }
  if (total === 0) return '  (no samples)\n'
  const sorted = (map: Map<string, number>): Array<[string, number]> => [...map].sort((a, b) => b[1] - a[1]).slice(0, top)
  return [
    'Self time by area (share of busy samples):',
    ...sorted(areas).map(([name, hits]) => line(hits / total, name)),
    'Top functions by self time:',
    ...sorted(selfTime).map(([name, hits]) => line(hits / total, name))
  ].join('\n') + '\n'
}
