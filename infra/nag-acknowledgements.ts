/**
 * cdk-nag acknowledgements of IAM5 (wildcard) findings, one per resource string, placed on the policy that holds
 * the statement: a wildcard added later to another policy of the same role is still reported.
 */
import { Stack, Validations } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import type { IConstruct } from 'constructs'

/**
 * How cdk-nag writes a resource in a finding id: `Fn::Join` flattened, `{Ref: AWS::Region}` as `<AWS::Region>`,
 * `{Fn::GetAtt: [id, attr]}` as `<id.attr>`.
 */
export function nagResource(resolved: unknown): string {
  if (typeof resolved === 'string') return resolved
  const token = resolved as {
    Ref?: string
    'Fn::GetAtt'?: [string, string]
    'Fn::Join'?: [string, unknown[]]
  }
  if (token.Ref !== undefined) return `<${token.Ref}>`
  if (token['Fn::GetAtt'] !== undefined) return `<${token['Fn::GetAtt'].join('.')}>`
  if (token['Fn::Join'] !== undefined) return token['Fn::Join'][1].map(nagResource).join(token['Fn::Join'][0])
  throw new Error(`cannot name ${JSON.stringify(resolved)} as cdk-nag does`)
}

/** Acknowledges `AwsSolutions-IAM5[Resource::<resource>]` for each resource (ARN strings or tokens) on `scope`. */
export function acknowledgeWildcardResources(
  scope: IConstruct,
  resources: readonly string[],
  reason: string,
): void {
  const stack = Stack.of(scope)
  const names = new Set(resources.map((r) => nagResource(stack.resolve(r))))
  for (const name of names) {
    if (!name.includes('*')) continue
    Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${name}]`, reason })
  }
}

export interface ScopedPolicyProps {
  readonly role: iam.IRole
  readonly statements: readonly iam.PolicyStatement[]
  /** Why the wildcards of these statements are needed; acknowledged on this policy only. */
  readonly reason: string
  /** Wildcard actions of these statements (`kms:GenerateDataKey*`) acknowledged with the same reason. */
  readonly wildcardActions?: readonly string[]
}

/**
 * A policy of its own for statements that need a wildcard, attached to `role`, with the IAM5 findings of exactly
 * its resources acknowledged on it: the role's other policies stay checked, so a wildcard added to them later
 * still fails cdk-nag.
 */
export function scopedPolicy(scope: IConstruct, id: string, props: ScopedPolicyProps): iam.Policy {
  const policy = new iam.Policy(scope, id, { roles: [props.role], statements: [...props.statements] })
  acknowledgeWildcardResources(
    policy,
    props.statements.flatMap((s) => s.resources),
    props.reason,
  )
  for (const action of props.wildcardActions ?? [])
    Validations.of(policy).acknowledge({ id: `AwsSolutions-IAM5[Action::${action}]`, reason: props.reason })
  return policy
}
