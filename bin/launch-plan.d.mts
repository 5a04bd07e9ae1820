export declare function asksForVersionOnly(args: readonly string[]): boolean
export declare function needsAllocatorSettings(args: readonly string[]): boolean
