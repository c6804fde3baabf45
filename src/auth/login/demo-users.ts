import type { UserRecord } from './users-file.js'

/**
 * Used when no USERS_FILE is configured (development only). The passwords are
 * the documented demo ones (changeme, secret, guess); only their hashes are kept.
 */
export const DEMO_USERS: readonly UserRecord[] = [
  { id: 1, username: 'john', passwordHash: '$scrypt$ln=14,r=8,p=5$9CyEKSOuGRwDOMNYDNWw7w$wG1lOIBnRSVx7uTvoGkxgU6UW9lh0DAoYXiGxszYrX4' },
  { id: 2, username: 'chris', passwordHash: '$scrypt$ln=14,r=8,p=5$nwXpSvuWynfjdceRSq+vNg$ktdeqpHNC/ezRYJm261Bx/C1Vk4oExVtc1ZNyWdxseg' },
  { id: 3, username: 'maria', passwordHash: '$scrypt$ln=14,r=8,p=5$Rr/X1/n12QJjFJ/7C412cQ$0uTcliFlCObJqVW1d1Z/Evbmx6b0GVDfvW7Frcfg8rE' }
]
