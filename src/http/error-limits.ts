/**
 * The bounds of every error answer, and its problem type: constants only, imported by the error schemas and by
 * the code that builds error bodies, so neither imports the other.
 */

/**
 * The longest `message` an error body carries, in UTF-16 units. Messages may quote the request
 * (its URL, a content type, the fields that failed), so they are cut: at six bytes of JSON per
 * unit at worst (`\u0001`), 400 units are at most 2,400 bytes.
 */
export const MAX_MESSAGE_CHARS = 400

/**
 * An error body lists at most this many issues: a body within the limit can fail in as many
 * places as it has nodes, and a list per node would answer a few kilobytes with megabytes.
 */
export const MAX_ISSUES = 10

/**
 * The longest field name and issue message, in UTF-16 units (a name repeats the keys of the
 * body, which may be long). With MAX_MESSAGE_CHARS, a body is at most 10 × (100 + 100) + 400
 * units, 14,400 bytes of JSON at six bytes a unit at worst, plus its structure: under 16 KiB.
 */
export const MAX_FIELD_CHARS = 100
export const MAX_ISSUE_MESSAGE_CHARS = 100

/**
 * Each problem type is this prefix and the error's code. A URN, not a link: the service has no address
 * of its own to publish documentation at (an embedding host decides where it lives), and RFC 9457 has
 * clients use a type as an identifier, not fetch it. The README's error codes say what each one means.
 */
export const PROBLEM_TYPE_PREFIX = 'urn:cats-auth-service:problem:'

/**
 * The longest `instance`, in UTF-16 units. The path is the client's own, and the body stays within the 16 KiB
 * of every error answer with it: validation issues and `detail` take at most 2,400 units (see validation-issues.ts),
 * and 200 more at six bytes of JSON each leave room for the other members.
 */
export const MAX_INSTANCE_CHARS = 200
