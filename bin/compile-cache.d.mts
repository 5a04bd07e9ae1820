import type { BuildOptions } from 'esbuild'

export declare function compiledEntry(): Promise<string | undefined>
export declare function bundleOptions(
  entry: string,
  outdir: string,
  plugins?: readonly unknown[],
): BuildOptions
