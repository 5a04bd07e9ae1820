/**
 * Child process of startS3rver(): runs s3rver on 127.0.0.1 with a random free port and prints `{"port": N}` on
 * stdout once it listens. Started with `node --openssl-legacy-provider` (else ListObjectsV2 pagination fails
 * with ERR_OSSL_EVP_UNSUPPORTED). Usage: node --openssl-legacy-provider --import tsx s3rver-child.ts <directory>
 */
import process from 'node:process'

import S3rver from 's3rver'

const directory = process.argv[2]!
const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true })
try {
  const address = (await server.run()) as { port: number }
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`)
} catch (error) {
  process.stderr.write(`s3rver failed to start: ${(error as Error).stack}\n`)
  process.exit(1)
}
process.on('SIGTERM', () => {
  void server.close().finally(() => process.exit(0))
})
