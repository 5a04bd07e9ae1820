/**
 * What a CDK app imports to deploy dimsync: the DimsyncLoader construct and the type of its configuration (the
 * TypeScript form of dimsync.yaml). See docs/aws.md, "In your own CDK app".
 */
export { DimsyncLoader, type DimsyncConfig, type DimsyncLoaderProps } from './constructs/dimsync-loader.ts'
