import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { access, mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'

import mysql from 'mysql2/promise'

import { makeTestCertificate } from './test-certificate.ts'

const SERVER = '/usr/sbin/mariadbd'
const INSTALL = '/usr/bin/mariadb-install-db'

export interface MariaDbTlsServer {
  readonly port: number
  /** The server's self-signed certificate (PEM), the CA a client must trust. */
  readonly ca: string
  /** Runs statements as root over the server's Unix socket. */
  sql(text: string): Promise<unknown>
  stop(): Promise<void>
}

/** Whether this machine has the MariaDB server binaries (Debian's mariadb-server). */
export async function mariaDbServerInstalled(): Promise<boolean> {
  try {
    await Promise.all([access(SERVER), access(INSTALL)])
    return true
  } catch {
    return false
  }
}

/**
 * A MariaDB server of the test's own, with TLS (the machine's shared server has none): a fresh data folder, a
 * certificate for 127.0.0.1, TCP on a free port of 127.0.0.1. Starts in about two seconds.
 */
export async function startMariaDbTlsServer(): Promise<MariaDbTlsServer> {
  const folder = await mkdtemp(join(tmpdir(), 'dimsync-mariadb-tls-'))
  const data = join(folder, 'data')
  const socket = join(folder, 'mysqld.sock')
  const { keyFile, certFile, cert } = await makeTestCertificate(folder)
  await promisify(execFile)(INSTALL, [
    '--no-defaults',
    `--datadir=${data}`,
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    '--user=root',
  ])
  const port = await freePort()
  const log = join(folder, 'server.log')
  const server: ChildProcess = spawn(
    SERVER,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${socket}`,
      `--pid-file=${join(folder, 'mariadbd.pid')}`,
      `--log-error=${log}`,
      '--user=root',
      `--ssl-cert=${certFile}`,
      `--ssl-key=${keyFile}`,
      '--innodb-buffer-pool-size=16M',
      '--skip-log-bin',
    ],
    { stdio: 'ignore' },
  )
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
  let admin: mysql.Connection | undefined
  for (let attempt = 0; admin === undefined; attempt++) {
    if (server.exitCode !== null || attempt === 200) {
      server.kill('SIGKILL')
      const why = await readFile(log, 'utf8').catch(() => '')
      await rm(folder, { recursive: true, force: true })
      throw new Error(`the test's MariaDB server did not start:\n${why.slice(-2000)}`)
    }
    admin = await mysql.createConnection({ socketPath: socket, user: 'root' }).catch(() => undefined)
    if (admin === undefined) await sleep(100)
  }
  return {
    port,
    ca: cert.toString(),
    sql: async (text) => (await admin.query(text))[0],
    async stop() {
      await admin.end().catch(() => undefined)
      server.kill('SIGTERM')
      await Promise.race([exited, sleep(10_000).then(() => server.kill('SIGKILL'))])
      await rm(folder, { recursive: true, force: true })
    },
  }
}

async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise((resolve) => probe.close(resolve))
  return port
}
