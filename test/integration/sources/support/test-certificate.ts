import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

export interface TestCertificate {
  /** PEM files in `folder`: the private key and the self-signed certificate (also the CA a client trusts). */
  readonly keyFile: string
  readonly certFile: string
  readonly key: Buffer
  readonly cert: Buffer
}

/** A self-signed certificate for a test server on 127.0.0.1, made by `openssl` into `folder`. */
export async function makeTestCertificate(folder: string): Promise<TestCertificate> {
  const keyFile = join(folder, 'key.pem')
  const certFile = join(folder, 'cert.pem')
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '1',
    '-subj',
    '/CN=dimsync test server',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ])
  const [key, cert] = await Promise.all([readFile(keyFile), readFile(certFile)])
  return { keyFile, certFile, key, cert }
}
