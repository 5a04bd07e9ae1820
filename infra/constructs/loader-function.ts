/**
 * One dimsync Lambda (extract or merge) bundled from functions/<kind>/handler.ts with esbuild, DuckDB's native
 * binding for the target architecture and dimsync.yaml copied into the bundle, its own role (no managed
 * policies) and its own log group. Permissions beyond logging are granted by the caller, per table.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { ArnFormat, Duration, RemovalPolicy, Size, Stack, Validations } from 'aws-cdk-lib'
import type * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs'
import * as logs from 'aws-cdk-lib/aws-logs'
import { Construct } from 'constructs'
import { isDynamicPattern } from 'tinyglobby'
import { withAllocatorSettings } from '../../lib/runtime/allocator-environment.mjs'
import { AWS_ENV } from '../../lib/runtime/aws-env.ts'
import { splitS3Path } from '../../lib/core/s3-path.ts'
import { bindingName, installLockedBinding, type FetchTarball } from '../bundling/native-binding.ts'
import { scopedPolicy, type ScopedPolicyProps } from '../nag-acknowledgements.ts'
import {
  BUNDLED_CONFIG_FILE,
  FUNCTION_METRICS_NAMESPACE,
  LAMBDA_RUNTIME_NAME,
  LAMBDA_TASK_ROOT,
} from '../defaults.ts'

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url))
const STAGE_SCRIPT = fileURLToPath(new URL('../bundling/stage-native-modules.mjs', import.meta.url))

export interface LoaderFunctionProps {
  readonly kind: 'extract' | 'merge'
  /** Handler file; default functions/<kind>/handler.ts (tests pass a fixture). */
  readonly entry?: string
  readonly configPath: string
  readonly architecture: 'arm64' | 'x86_64'
  readonly memoryMb: number
  readonly timeoutSeconds: number
  readonly environment: Readonly<Record<string, string>>
  readonly logRetentionDays: number
  readonly removalPolicy: RemovalPolicy
  readonly vpc?: {
    readonly vpc: ec2.IVpc
    readonly subnets: ec2.ISubnet[]
    readonly securityGroups: ec2.ISecurityGroup[]
  }
  /** Concurrent executions reserved for (and allowed to) the function; absent: unreserved. */
  readonly reservedConcurrency?: number
  /** Describes which tables the function serves (in the console). */
  readonly description: string
}

/** Where a file source on S3 reads: the bucket, and the key prefix the extract lists (a whole key if `exact`). */
export interface S3SourceLocation {
  readonly bucket: string
  readonly prefix: string
  readonly exact: boolean
}

/**
 * The location of `s3://bucket/key-or-glob`, or undefined for a local path. The prefix is the path up to the
 * first segment that is a glob (as tinyglobby sees it), with its trailing slash: the prefix the extract lists
 * with (lib/adapters/source/s3-files.ts).
 */
export function s3SourceLocation(path: string): S3SourceLocation | undefined {
  const split = splitS3Path(path)
  if (split === undefined) return undefined
  const { bucket, pattern: key } = split
  const segments = key.split('/')
  const firstGlob = segments.findIndex((segment) => isDynamicPattern(segment))
  if (firstGlob < 0) return { bucket, prefix: key, exact: true }
  const fixed = segments.slice(0, firstGlob).join('/')
  return { bucket, prefix: fixed === '' ? '' : `${fixed}/`, exact: false }
}

/** functions/<kind>/handler.ts, or index.ts where the functions keep their entry point. */
export function defaultEntry(kind: 'extract' | 'merge'): string {
  const folder = path.join(PROJECT_ROOT, 'functions', kind)
  const found = ['handler.ts', 'index.ts'].map((f) => path.join(folder, f)).find((f) => existsSync(f))
  if (found === undefined)
    throw new Error(
      `the ${kind} function is missing: neither ${folder}/handler.ts nor ${folder}/index.ts exists`,
    )
  return found
}

/**
 * Makes DuckDB's binding for a linux `nodeArch` Lambda available to the bundle: the project's node_modules has
 * it when this machine is that platform (`npm ci` verified it); otherwise it is fetched once at the lockfile's
 * version and integrity into `.lambda-native` (see infra/bundling/native-binding.ts). Returns what to do when
 * that fails (no registry access, a hash mismatch).
 */
export function ensureNativeBinding(
  nodeArch: 'x64' | 'arm64',
  projectRoot = PROJECT_ROOT,
  fetchTarball?: FetchTarball,
): string | undefined {
  const name = bindingName(nodeArch)
  if (existsSync(path.join(projectRoot, 'node_modules', name, 'duckdb.node'))) return undefined
  try {
    installLockedBinding(projectRoot, name, fetchTarball)
    return undefined
  } catch (error) {
    return (
      `${name} is not installed, so a linux ${nodeArch} Lambda would have no DuckDB binary; synth fetches it ` +
      `once, at the version and integrity hash of package-lock.json, into .lambda-native, and that failed: ` +
      `${(error as Error).message}
` +
      `Synth again with access to the npm registry, or deploy with aws: { architecture: ` +
      `${nodeArch === 'arm64' ? 'x86_64' : 'arm64'} } in dimsync.yaml`
    )
  }
}

function shellQuote(value: string): string {
  return `"${value.replace(/(["\\$`])/g, '\\$1')}"`
}

export class LoaderFunction extends Construct {
  readonly function: NodejsFunction
  /**
   * The version published by this deploy: the state machine invokes it, so an execution runs one code version
   * from its first pass to its merge even when a deploy happens meanwhile (running executions keep the
   * definition they started with). Kept on later deploys for those executions.
   */
  readonly version: lambda.Version
  readonly role: iam.Role
  readonly logGroup: logs.LogGroup

  constructor(scope: Construct, id: string, props: LoaderFunctionProps) {
    super(scope, id)
    const entry = props.entry ?? defaultEntry(props.kind)
    const nodeArch = props.architecture === 'arm64' ? 'arm64' : 'x64'

    // Checked here, not only in the bundling script, so the message is the error synth fails with.
    const problem = Stack.of(this).bundlingRequired ? ensureNativeBinding(nodeArch) : undefined
    if (problem !== undefined) throw new Error(problem)

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as logs.RetentionDays,
      removalPolicy: props.removalPolicy,
    })
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `dimsync ${props.kind}: ${props.description}`,
    })
    // Written by hand instead of AWSLambdaBasicExecutionRole: that managed policy may write to any log group.
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    )

    this.function = new NodejsFunction(this, 'Function', {
      entry,
      handler: 'handler',
      runtime: new lambda.Runtime(LAMBDA_RUNTIME_NAME, lambda.RuntimeFamily.NODEJS, {
        supportsInlineCode: true,
      }),
      architecture: props.architecture === 'arm64' ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
      memorySize: props.memoryMb,
      // Room in /tmp for parts written before upload (extract) or downloaded to verify (merge).
      ephemeralStorageSize: Size.mebibytes(props.kind === 'extract' ? 4096 : 2048),
      timeout: Duration.seconds(props.timeoutSeconds),
      description: `dimsync ${props.kind}: ${props.description}`,
      role: this.role,
      logGroup: this.logGroup,
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN },
      ...(props.reservedConcurrency !== undefined
        ? { reservedConcurrentExecutions: props.reservedConcurrency }
        : {}),
      loggingFormat: lambda.LoggingFormat.JSON,
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      environment: {
        ...props.environment,
        [AWS_ENV.configPath]: `${LAMBDA_TASK_ROOT}/${BUNDLED_CONFIG_FILE}`,
        POWERTOOLS_SERVICE_NAME: `dimsync-${props.kind}`,
        POWERTOOLS_METRICS_NAMESPACE: FUNCTION_METRICS_NAMESPACE,
        // The allocator settings the CLI starts with (bin/dimsync.mjs): the extract's socket buffers, DuckDB's
        // freed memory and V8's young generation go back to the system instead of staying resident.
        ...withAllocatorSettings({ NODE_OPTIONS: '--enable-source-maps' }),
      },
      ...(props.vpc !== undefined
        ? {
            vpc: props.vpc.vpc,
            vpcSubnets: { subnets: props.vpc.subnets },
            securityGroups: props.vpc.securityGroups,
          }
        : {}),
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        minify: false,
        sourceMap: true,
        // ESM bundles of CommonJS dependencies (pg, mysql2) still call require().
        banner:
          "import { createRequire as __dimsyncCreateRequire } from 'node:module'; const require = __dimsyncCreateRequire(import.meta.url);",
        // The SDK is bundled at the pinned version instead of the runtime's, which changes without notice.
        bundleAwsSDK: true,
        externalModules: ['@duckdb/node-api', '@duckdb/node-bindings', 'pg-native'],
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (_inputDir: string, outputDir: string) => [
            [
              'node',
              shellQuote(STAGE_SCRIPT),
              '--project',
              shellQuote(PROJECT_ROOT),
              '--out',
              shellQuote(outputDir),
              '--arch',
              nodeArch,
              '--config',
              shellQuote(props.configPath),
            ].join(' '),
          ],
        },
      },
    })

    this.version = this.function.currentVersion
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'The runtime is pinned to nodejs22.x on purpose: the code and its DuckDB binary are tested on Node 20/22, ' +
        'and a runtime that moves with the CDK version would change production on an unrelated deploy.',
    })
    // Active tracing set on the resource instead of through the L2 prop, which would put the X-Ray wildcard
    // statement into the role's default policy, beside the statements cdk-nag must keep checking.
    ;(this.function.node.defaultChild as lambda.CfnFunction).tracingConfig = { mode: 'Active' }
    this.addPolicy('Tracing', {
      statements: [
        new iam.PolicyStatement({
          actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
          resources: ['*'],
        }),
      ],
      reason: 'xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions.',
    })
    if (props.vpc !== undefined) this.#allowNetworkInterfaces(props.vpc)
  }

  /**
   * What Lambda needs to place the function in the VPC: it creates, describes and deletes the function's network
   * interfaces with the function's own role, and checks these permissions when the function is created. Written
   * here instead of AWSLambdaVPCAccessExecutionRole (which allows them on every subnet), in a policy of its own
   * so the wildcards it needs are acknowledged on exactly these statements.
   */
  #allowNetworkInterfaces(vpc: NonNullable<LoaderFunctionProps['vpc']>): void {
    const stack = Stack.of(this)
    const arn = (resource: string, name: string, account?: string) =>
      stack.formatArn({
        service: 'ec2',
        resource,
        resourceName: name,
        arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
        ...(account !== undefined ? { account } : {}),
      })
    const interfaces = arn('network-interface', '*')
    // Shared subnets (AWS RAM) and their security groups carry the owner account's id in their ARN.
    const subnets = vpc.subnets.map((s) => arn('subnet', s.subnetId, '*'))
    const groups = vpc.securityGroups.map((g) => arn('security-group', g.securityGroupId, '*'))
    const reason =
      'Lambda creates the network interfaces of the function with its role: their ids are not known at deploy ' +
      'time (network-interface/*), describe actions accept no resource (*), and shared subnets and security ' +
      'groups belong to another account (*).'
    const policy = this.addPolicy('NetworkInterfaces', {
      reason,
      statements: [
        new iam.PolicyStatement({
          // Describe actions support no resource-level permissions.
          actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
          resources: ['*'],
        }),
        new iam.PolicyStatement({
          actions: ['ec2:CreateNetworkInterface'],
          resources: [interfaces, ...subnets, ...groups],
        }),
        new iam.PolicyStatement({
          actions: [
            'ec2:DeleteNetworkInterface',
            'ec2:AssignPrivateIpAddresses',
            'ec2:UnassignPrivateIpAddresses',
          ],
          resources: [interfaces],
        }),
      ],
    })
    // Lambda refuses to create a VPC function whose role cannot create network interfaces yet.
    this.function.node.addDependency(policy)
  }

  /**
   * Lets an extract function read the file sources on S3 at `paths` (`s3://bucket/key-or-glob`; other paths are
   * ignored) and nothing else: `s3:GetObject` on the objects under each path's fixed prefix (the key before its
   * first glob character; exactly the key when it has none), and `s3:ListBucket` of each bucket only for the
   * prefixes the source lists (the condition matches the `prefix` the extract sends, so listing elsewhere in the
   * bucket is refused).
   */
  grantSourceRead(paths: readonly string[]): void {
    const locations = paths.flatMap((p) => {
      const location = s3SourceLocation(p)
      return location === undefined ? [] : [location]
    })
    if (locations.length === 0) return
    const partition = Stack.of(this).partition
    const buckets = [...new Set(locations.map((l) => l.bucket))].sort()
    this.addPolicy('SourceFiles', {
      statements: [
        new iam.PolicyStatement({
          actions: ['s3:GetObject'],
          resources: [
            ...new Set(
              locations.map(
                (l) => `arn:${partition}:s3:::${l.bucket}/${l.exact ? l.prefix : `${l.prefix}*`}`,
              ),
            ),
          ],
        }),
        ...buckets.map((bucket) => {
          const prefixes = [...new Set(locations.filter((l) => l.bucket === bucket).map((l) => l.prefix))]
          return new iam.PolicyStatement({
            actions: ['s3:ListBucket'],
            resources: [`arn:${partition}:s3:::${bucket}`],
            // A glob at the bucket's root lists the whole bucket (no prefix is sent to match a condition on).
            ...(prefixes.includes('') ? {} : { conditions: { StringEquals: { 's3:prefix': prefixes } } }),
          })
        }),
      ],
      reason:
        'The extract reads the file sources on S3 the config names: the objects under each source path ' +
        'prefix, which are named by whoever drops the files (a glob picks them).',
    })
  }

  /**
   * Grants `statements` to the function's role in a policy of its own (`id`), the wildcards of its resources
   * acknowledged on that policy only (see scopedPolicy).
   */
  addPolicy(id: string, props: Omit<ScopedPolicyProps, 'role'>): iam.Policy {
    return scopedPolicy(this, id, { ...props, role: this.role })
  }
}
