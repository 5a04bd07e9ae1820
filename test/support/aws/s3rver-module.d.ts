// s3rver 3.7 ships no types; the launcher uses only this much of it.
declare module 's3rver' {
  export default class S3rver {
    constructor(options: { address: string; port: number; directory: string; silent: boolean })
    run(): Promise<unknown>
    close(): Promise<void>
  }
}
