import type { RefreshLimit, Rotation, SessionRecord } from './session-store.js'

/** What presenting a generation does to a session, whatever the store: the one rule the SQL and memory stores apply (Redis's script mirrors it). */
export type Decision =
  | { action: 'rotate', next: SessionRecord }
  | { action: 'repeat', next: SessionRecord }
  | { action: 'end' }
  | { action: 'ended' }
  | { action: 'limited', retryAfterMs: number }
  | { action: 'refuse' }

export function decideRotation (
  session: SessionRecord | undefined, presented: number, nowMs: number, nextExpiresMs: number, limit: RefreshLimit
): Decision {
  if (session === undefined || session.expiresMs <= nowMs) return { action: 'refuse' }
  if (session.ended) return { action: 'ended' }
  if (presented > session.generation) return { action: 'refuse' }
  // Two tabs refreshing at once: the later one gets what the first got. Anything older, or later, is reuse.
  const repeat = presented === session.generation - 1 && nowMs - session.rotatedMs < limit.reuseWindowMs
  if (presented < session.generation && !repeat) return { action: 'end' }
  const windowOver = nowMs - session.windowStartMs >= limit.windowMs
  if (!windowOver && session.windowCount >= limit.max) {
    return { action: 'limited', retryAfterMs: session.windowStartMs + limit.windowMs - nowMs }
  }
  const counted = {
    ...session,
    lastUsedMs: nowMs,
    windowStartMs: windowOver ? nowMs : session.windowStartMs,
    windowCount: windowOver ? 1 : session.windowCount + 1
  }
  if (repeat) return { action: 'repeat', next: counted }
  return { action: 'rotate', next: { ...counted, generation: session.generation + 1, rotatedMs: nowMs, expiresMs: nextExpiresMs } }
}

/** An ended session's record: kept no longer than `endedKeepMs` from now. */
export function endedRecord (session: SessionRecord, nowMs: number, endedKeepMs: number): SessionRecord {
  return { ...session, ended: true, expiresMs: Math.min(session.expiresMs, nowMs + endedKeepMs) }
}

/** What the caller of rotate learns of a decision once it has been applied. */
export function outcomeOf (decision: Decision): Rotation {
  switch (decision.action) {
    case 'rotate': return { outcome: 'rotated', session: decision.next }
    case 'repeat': return { outcome: 'repeated', session: decision.next }
    case 'end': return { outcome: 'reused' }
    case 'ended': return { outcome: 'ended' }
    case 'limited': return { outcome: 'limited', retryAfterMs: decision.retryAfterMs }
    case 'refuse': return { outcome: 'refused' }
  }
}
