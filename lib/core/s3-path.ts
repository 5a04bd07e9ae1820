/** The scheme of a file source on S3. */
export const S3_SCHEME = 's3://'

export interface S3Path {
  readonly bucket: string
  /** The key or key glob, without a leading slash. */
  readonly pattern: string
}

/**
 * Splits `s3://bucket/key-or-glob`; undefined when the path names no objects (no bucket, no key, or a key ending
 * in `/`). One rule for the config check, the source that lists the objects and the IAM grant of the extract.
 */
export function splitS3Path(path: string): S3Path | undefined {
  if (!path.startsWith(S3_SCHEME)) return undefined
  const rest = path.slice(S3_SCHEME.length)
  const slash = rest.indexOf('/')
  const bucket = slash < 0 ? rest : rest.slice(0, slash)
  const pattern = slash < 0 ? '' : rest.slice(slash + 1)
  if (bucket === '' || pattern === '' || pattern.endsWith('/')) return undefined
  return { bucket, pattern }
}

/** What a user should write instead of `path`. */
export function s3PathHint(path: string): string {
  const bucket = path.slice(S3_SCHEME.length).split('/')[0] || 'bucket'
  return `${path} names no objects; write s3://<bucket>/<key or glob>, for example s3://${bucket}/exports/*.parquet`
}
