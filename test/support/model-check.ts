import fc from 'fast-check'
import type { Test } from 'tap'

/**
 * Runs a model-based property `numRuns` times (FC_SEED replays a failure) and
 * reports it on `t`: the shrunk counterexample when it fails, else that every
 * run agreed with the model (`runs` says what a run was). Then checks that the
 * generators reached every behaviour named in `behaviours` (counted in `reached`).
 */
export async function checkModel<Ts> (t: Test, property: fc.IAsyncProperty<Ts>, options: {
  numRuns: number
  runs: string
  reached: Map<string, number>
  behaviours: string[]
}): Promise<void> {
  const { numRuns, runs, reached, behaviours } = options
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
  const details = await fc.check(property, { numRuns, seed })
  if (details.failed) {
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
    t.fail(`${await fc.asyncDefaultReportMessage(details)}\n${error}\n(rerun with FC_SEED=<seed above> to replay)`)
    return
  }
  t.equal(details.numRuns, numRuns, `${numRuns} ${runs}, all agreed with the model`)
  // The generators must actually reach every behaviour the model describes.
  for (const what of behaviours) t.ok((reached.get(what) ?? 0) > 0, `reached: ${what} (${reached.get(what) ?? 0} times)`)
}
