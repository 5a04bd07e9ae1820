/**
 * cdk-nag acknowledgements of IAM5 (wildcard) findings, one per resource string, placed on the policy that holds
 * the statement: a wildcard added later to another policy of the same role is still reported.
 */
import { Stack, Validations } from 'aws-cdk-lib'
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
